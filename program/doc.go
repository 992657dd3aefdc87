// Package program is the assembly every podsweeper program shares, so that
// a node agent, a cluster-wide controller and a collector of another kind
// of resource offer the same flags, the same rails and the same endpoints,
// and their main.go files keep only what is their own: their flags, their
// ports and the checks of their command line. It sits beside the adapters, not among them: it puts them together
// (adapters/k8s for the API server, adapters/cri for the runtime), as a program's main does.
//
// A program's main.go reads top to bottom:
//
//	func main() { program.Main("my-agent", run) }     // signals, arguments, exit status
//
//	type config struct {
//		program.Flags                      // the flags every program has
//		node program.NodeFlags             // optional groups: --node, --cri-endpoint
//		podCache program.PodCacheFlags     // --slim-pod-cache
//		... its own
//	}
//
//	func parseFlags(args, getenv, stderr) (config, error) {
//		cfg := config{Flags: program.Defaults()}    // its defaults for the shared flags
//		cfg.node.Bind(fs, getenv, "what it asks the runtime"); cfg.podCache.Bind(fs)
//		... its own flags on fs
//		cfg.Parse(fs, args)                         // binds and checks the shared flags
//		... checks its own; cfg.node.Validate()     // every error wraps ErrUsage: status 2
//	}
//
//	func run(ctx, args, getenv, stderr) error {
//		cfg, err := parseFlags(args, getenv, stderr)
//		log := cfg.NewLogger(stderr)               // JSON lines; records of PUs never sampled out
//		... opens what is its own (a journal, the runtime: cfg.node.Runtime) and closes it on return
//		return program.Run(ctx, cfg.Flags, program.Options{Name: ..., Logger: log, Policy: ..., Engine: ...})
//	}
//
// Every command line the program cannot run with is refused before it
// connects to anything, with status 2: the shared flags by Flags.Validate
// (those the engine would refuse, deletion.Options.Validate, among them,
// a client rate limit below MinKubeAPIQPS, and an endpoint's address that
// net.Listen could not bind or that two endpoints share), the groups' by their
// Validate, the program's own by its parseFlags and by what it opens, and
// a --kubeconfig that names no file by Flags.RESTConfig, which reads it
// first thing in Build.
//
// Run is Build, then the manager's Start. Build assembles, in this order:
// the manager, from Flags.RESTConfig (the client's rate limit holds however
// the cluster's config is given) and Flags.ManagerOptions (metrics over
// HTTPS behind authentication, probes, pprof), whose pod cache is
// Options.Cache scoped to the engine's node (k8s.NodeCacheOptions), with
// leader election on Options.Lease, fenced (k8s.LeaseFence); the metrics
// (k8s.NewMetrics) and, with --dry-run, its report (Flags.DryRunReport);
// the engine (deletion.New), whose checks read the pod cache through
// Options.Pods, whose every destroy is confirmed by a direct read of the
// API server (the Confirmer), and whose Observers are the dry run's
// report, the program's own, then the metrics and, with Options.Events,
// the Kubernetes Events; the wiring (k8s.SetupWithManager for an engine with a node,
// k8s.SetupClusterWithManager without); Options.Beside; and the shared
// endpoints (Serve). It binds the probes', pprof's and the status listener's addresses itself,
// before the manager, and serves them from the manager it returns, so that
// a step that fails releases them (and unregisters the metrics): a failed
// Build leaves nothing bound.
//
// The rails every program has: --dry-run (decide every destroy, the
// confirming read included, destroy nothing, and report each PU that would
// go on k8s.DryRunPath, in the log and in podsweeper_would_destroy_total),
// --max-destroys-per-second and --destroy-burst (deletion.Options.DestroyRate),
// the status page (k8s.StatusPath), beside /metrics and on a loopback
// listener of its own (--status-bind-address, plain HTTP, for a
// port-forward through the API server: kubectl podsweeper reads it), the
// backlog metrics
// (k8s.NewBacklogCollector), the readiness checks "pod-cache" (CacheSynced)
// and "podsweeper", and a client rate limit that holds however the
// cluster's config is given.
package program
