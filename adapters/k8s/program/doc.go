// Package program is the wiring every podsweeper program shares, so that a
// node agent, a cluster-wide controller and a collector of another kind of
// resource offer the same flags, the same rails and the same endpoints, and
// their main.go files keep only what is their own.
//
// A program's main reads top to bottom:
//
//	var cfg config                       // its own flags, program.Flags embedded
//	cfg.Flags = program.Flags{...}       // its defaults for the shared flags
//	cfg.Flags.Bind(fs); fs.Parse(args)   // the shared flags beside its own
//	cfg.Flags.Validate()                 // one error style: wraps ErrUsage
//	log := cfg.NewLogger(stderr)         // JSON lines; records of PUs never sampled out
//	rc, _ := cfg.RESTConfig()            // --kubeconfig, the client's QPS and burst
//	mgr, _ := ctrl.NewManager(rc, cfg.ManagerOptions(log, cacheOpts))
//	engine, _ := deletion.New(getter, policy, cfg.EngineOptions(opts))
//	program.Serve(mgr, engine, ServeOptions{...}) // probes, status and dry-run pages, backlog metrics
//	program.Exit(name, mgr.Start(ctx))
//
// The rails every program has: --dry-run (decide every destroy, the
// confirming read included, destroy nothing, and report each PU that would
// go on DryRunPath, in the log and in podsweeper_would_destroy_total),
// --max-destroys-per-second and --destroy-burst (deletion.Options.DestroyRate),
// the status page (k8s.StatusPath) and the backlog metrics
// (k8s.NewBacklogCollector), and a client rate limit that holds however the
// cluster's config is given.
package program
