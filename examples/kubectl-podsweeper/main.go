package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage is wrapped by every error of a command line: exit status 2.
var errUsage = errors.New("usage")

const usage = `kubectl podsweeper: why podsweeper's programs keep or destroy a pod's PU.

  kubectl podsweeper explain pod NAMESPACE/NAME [--node NODE] [-o json]
  kubectl podsweeper explain pod --uid UID [--node NODE] [-o json]
  kubectl podsweeper explain ip ADDRESS --node NODE [-o json]
  kubectl podsweeper status --node NODE [-o json]
  kubectl podsweeper report [-o json]

explain pod: for each program that holds a PU of the pod, the PU, its state, the row of its last
check and why, a veto, its destroy attempts, its last error and what a dry run would do; and the
pod's podsweeper Events. explain ip: what holds the address on the node as cni-gc sees it (an
attachment of libcni's cache and its pod, or a host-local reservation), and whether and why
cni-gc frees it. status: every PU of the programs on a node. report: every program's dry run
report, in one table. The programs are found by their charts' labels in --namespace (default:
every namespace you may list pods of) and asked through a port-forward to their pods, as you:
docs/operating/explain.md says which role of the charts to bind.

Flags:
`

// subcommand is one command's own help: its command lines, what it tells,
// and the flags it reads besides the kubeconfig's.
type subcommand struct {
	name  string
	usage []string
	help  string
	flags []string
	// flagHelp is what a flag means to this command, where its shared help says it for several.
	flagHelp map[string]string
}

// subcommands are the commands, each with its help (--help after its name).
var subcommands = []subcommand{
	{name: "explain pod", usage: []string{"explain pod NAMESPACE/NAME [--node NODE] [-o json]", "explain pod --uid UID [--node NODE] [-o json]"},
		help: `for each program that holds a PU of the pod, the PU, its state, the row of its last
check and why, a veto, its destroy attempts, its last error and what a dry run would do; and the
pod's podsweeper Events. A PU is in the answer until it is destroyed, its pod gone or not: a pod
that is gone is asked by its UID (--uid), or by its name; a pod that ran on another node than the
pod of that name now, by its UID or with that node (--node).`,
		flags:    []string{"uid", "node", "namespace", "output", "timeout"},
		flagHelp: map[string]string{"node": "the node whose programs are asked: the node the pod ran on, for a pod that is gone; another node, for a live pod, to find an earlier pod's PU there"}},
	{name: "explain ip", usage: []string{"explain ip ADDRESS --node NODE [-o json]"},
		help: `what holds the address on the node as cni-gc sees it (an attachment of libcni's
cache and its pod, or a host-local reservation), and whether and why cni-gc frees it.`,
		flags:    []string{"node", "namespace", "output", "timeout"},
		flagHelp: map[string]string{"node": "the node whose cni-gc is asked"}},
	{name: "status", usage: []string{"status --node NODE [-o json]"},
		help: `every PU of the programs on a node: its pod, its state, its last check's row and why, its
attempts, its next attempt and what a dry run would do.`,
		flags:    []string{"node", "namespace", "output", "timeout"},
		flagHelp: map[string]string{"node": "the node whose programs are asked"}},
	{name: "report", usage: []string{"report [-o json]"},
		help:  `every program's dry run report, in one table: what each would destroy, and why.`,
		flags: []string{"namespace", "output", "timeout"}},
}

// foreignFlag refuses a flag of another command given to sc, which does not read it (it would be taken as
// narrowing what sc asks).
func foreignFlag(fs *pflag.FlagSet, sc subcommand) error {
	for _, f := range []string{"uid", "node"} {
		if fs.Changed(f) && !slices.Contains(sc.flags, f) {
			return fmt.Errorf("%w: %s does not read --%s; its flags: --%s", errUsage, sc.name, f, strings.Join(sc.flags, ", --"))
		}
	}
	return nil
}

// commandOf returns the command args name ("explain pod", "status", ...),
// its flags of fs and their values aside, for its own help; false when
// they name none.
func commandOf(fs *pflag.FlagSet, args []string) (subcommand, bool) {
	var words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			words = append(words, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			words = append(words, a)
			continue
		}
		var f *pflag.Flag
		switch name := strings.TrimLeft(a, "-"); {
		case strings.Contains(a, "="):
		case strings.HasPrefix(a, "--"):
			f = fs.Lookup(name)
		case len(name) == 1:
			f = fs.ShorthandLookup(name)
		}
		if f != nil && f.NoOptDefVal == "" {
			i++ // its value is the next argument
		}
	}
	for i, w := range words {
		name := w
		if w == "explain" && i+1 < len(words) {
			name += " " + words[i+1]
		}
		for _, c := range subcommands {
			if c.name == name {
				return c, true
			}
		}
	}
	return subcommand{}, false
}

// run runs the command line args, writing the answer to stdout and the
// errors to stderr, and returns the exit status: 0, 1 for an error (one
// line, "forbidden: ..." when RBAC refused), 2 for a bad command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := command(ctx, args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "kubectl-podsweeper:", err)
		return 2
	}
	fmt.Fprintln(stderr, "kubectl-podsweeper:", err)
	return 1
}

// command parses args and runs the command they name.
func command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("kubectl-podsweeper", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	// The usage is told once the parse has said it was asked for (--help, -h, --help=true, wherever it stands): it is
	// the answer, on stdout. A bad command line is told in one line, on stderr (run).
	fs.Usage = func() {}
	usageTo := func(help io.Writer) {
		cmd, ok := commandOf(fs, args)
		if !ok {
			fmt.Fprint(help, usage+fs.FlagUsages())
			return
		}
		fmt.Fprint(help, "kubectl podsweeper "+cmd.name+": "+cmd.help+"\n\n")
		for _, u := range cmd.usage {
			fmt.Fprintln(help, "  kubectl podsweeper "+u)
		}
		own := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
		for _, name := range append(cmd.flags, "request-timeout") { // kubectl's, which --timeout's help names
			f := *fs.Lookup(name)
			if h, ok := cmd.flagHelp[name]; ok {
				f.Usage = h
			}
			own.AddFlag(&f)
		}
		fmt.Fprint(help, "\nFlags:\n"+own.FlagUsages()+"\nThe kubeconfig's flags (--kubeconfig, --context, --as, ...): kubectl podsweeper --help\n")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file")
	overrides := &clientcmd.ConfigOverrides{}
	flags := clientcmd.RecommendedConfigOverrideFlags("")
	flags.ClusterOverrideFlags.APIServer.ShortName = "s" // kubectl's -s, --server
	clientcmd.BindOverrideFlags(overrides, fs, flags)
	fs.Lookup("namespace").Usage = "the programs' namespace; default: every namespace you may list pods of"
	output := fs.StringP("output", "o", "", `output format: "" (text) or json`)
	uid := fs.String("uid", "", "explain pod: the pod's UID, instead of (or besides) its name")
	node := fs.String("node", "", "status, explain ip: the node; explain pod: the node whose programs are asked (the node the pod ran on, for a pod that is gone; another node, for a live pod, to find an earlier pod's PU there)")
	timeout := fs.Duration("timeout", 20*time.Second, "how long each program may take to answer, from its port-forward's opening to its last page's answer (--request-timeout bounds each request to the API server)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			if sc, ok := commandOf(fs, args); ok {
				if err := foreignFlag(fs, sc); err != nil { // refused with its help as without
					return err
				}
			}
			usageTo(stdout)
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *output != "" && *output != "json" {
		return fmt.Errorf("%w: -o %q: give json, or nothing for text", errUsage, *output)
	}
	json := *output == "json"
	words := fs.Args()
	if len(words) == 0 {
		usageTo(stderr)
		return fmt.Errorf("%w: no command: explain pod, explain ip, status or report", errUsage)
	}

	// The command line is checked before anything is asked.
	if *timeout <= 0 {
		return fmt.Errorf("%w: --timeout=%v: give a duration above 0 (each program's question is bounded by it)", errUsage, *timeout)
	}
	var namespace, name, ip string
	switch words[0] {
	case "explain":
		if len(words) >= 2 && words[1] == "ip" {
			if len(words) != 3 || *node == "" {
				return fmt.Errorf("%w: explain ip ADDRESS --node NODE", errUsage)
			}
			addr := net.ParseIP(words[2])
			if addr == nil {
				return fmt.Errorf("%w: explain ip %q: not an IP address", errUsage, words[2])
			}
			ip = addr.String()
			break
		}
		if len(words) < 2 || words[1] != "pod" {
			return fmt.Errorf("%w: explain what? explain pod NAMESPACE/NAME, explain pod --uid UID, or explain ip ADDRESS --node NODE", errUsage)
		}
		switch len(words) {
		case 2:
			if *uid == "" {
				return fmt.Errorf("%w: explain pod: give NAMESPACE/NAME or --uid", errUsage)
			}
		case 3:
			namespace, name, _ = strings.Cut(words[2], "/")
			if !strings.Contains(words[2], "/") {
				namespace, name = "", words[2]
			}
			if name == "" || strings.Contains(name, "/") || namespace == "" && strings.Contains(words[2], "/") {
				return fmt.Errorf("%w: explain pod %q: give NAMESPACE/NAME", errUsage, words[2])
			}
		default:
			return fmt.Errorf("%w: explain pod takes one pod, got %q", errUsage, words[2:])
		}
	case "status":
		if len(words) != 1 || *node == "" {
			return fmt.Errorf("%w: status --node NODE", errUsage)
		}
	case "report":
		if len(words) != 1 {
			return fmt.Errorf("%w: report takes no argument, got %q", errUsage, words[1:])
		}
	default:
		return fmt.Errorf("%w: unknown command %q: explain pod, explain ip, status or report", errUsage, words[0])
	}

	// A flag of one command given to another would be taken as narrowing what it asks: it does not.
	command := words[0]
	if command == "explain" {
		command += " " + words[1]
	}
	for _, sc := range subcommands {
		if sc.name == command {
			if err := foreignFlag(fs, sc); err != nil {
				return err
			}
		}
	}

	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return fmt.Errorf("no kubeconfig: give --kubeconfig, set KUBECONFIG, or write ~/.kube/config, as for kubectl")
	}
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-podsweeper"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// --namespace is the programs'; without it, every namespace the user
	// may list pods of, whatever the kubeconfig's context says.
	programsNS := ""
	if fs.Changed("namespace") {
		programsNS = overrides.Context.Namespace
	}
	c := &cluster{config: cfg, cs: cs, namespace: programsNS, timeout: *timeout}
	now := time.Now().UTC()

	switch words[0] {
	case "explain":
		if ip != "" {
			x, err := c.explainIP(ctx, ip, *node, now)
			if err != nil {
				return err
			}
			if json {
				return RenderIPJSON(stdout, x)
			}
			return RenderIP(stdout, x)
		}
		if name != "" && namespace == "" {
			// NAME alone: the kubeconfig's namespace, as kubectl takes it with the same flags (--server, --cluster,
			// --user, --context...), but --namespace, which is the programs'.
			podOverrides := *overrides
			podOverrides.Context.Namespace = ""
			raw, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &podOverrides).Namespace()
			if err != nil {
				return err
			}
			namespace = raw
		}
		x, err := c.explainPod(ctx, namespace, name, *uid, *node, now)
		if err != nil {
			return err
		}
		if json {
			return RenderPodJSON(stdout, x)
		}
		return RenderPod(stdout, x)
	case "status":
		s, err := c.status(ctx, *node, now)
		if err != nil {
			return err
		}
		if json {
			return writeJSON(stdout, s)
		}
		return RenderStatus(stdout, s)
	default: // report
		r, err := c.report(ctx, now)
		if err != nil {
			return err
		}
		if json {
			return writeJSON(stdout, r)
		}
		return RenderReport(stdout, r)
	}
}
