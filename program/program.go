package program

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/pathkind"
)

// ErrUsage is wrapped by every error of a command line the program cannot
// run with; Exit exits with status 2 on it.
var ErrUsage = errors.New("usage")

// Off is the address that turns an endpoint off.
const Off = "0"

// MinKubeAPIQPS is the lowest client rate limit a program runs with, in
// requests a second: below it the client's own requests wait longer than
// the program can (a Lease renewed every retry period, 2s by default; the
// relist of a watch that expired; the read that confirms a destroy), and the
// program fails long after it started: the cluster controller loses its
// Lease. A negative --kube-api-qps turns the limit off instead.
const MinKubeAPIQPS = 1.0

// Flags are the command-line flags every podsweeper program has. A program
// sets its own defaults in the fields before Bind, which registers the
// flags with them.
type Flags struct {
	// Kubeconfig is --kubeconfig: empty finds the cluster as
	// controller-runtime does ($KUBECONFIG, in-cluster, ~/.kube/config).
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst are --kube-api-qps and --kube-api-burst:
	// the client's rate limit, however the config is given; a negative QPS
	// turns the client-side limit off (the API server's priority and
	// fairness decide). A QPS from 0 to MinKubeAPIQPS is refused (0:
	// client-go would read it as 5 a second).
	KubeAPIQPS   float64
	KubeAPIBurst int
	// MetricsBindAddress is --metrics-bind-address, where /metrics, the
	// status page and the dry run's report are served; Off turns them off.
	MetricsBindAddress string
	// MetricsSecure is --metrics-secure: HTTPS, only to clients whose token
	// the API server authenticates and authorizes (a get on the URL);
	// false serves plain HTTP, and then only on a loopback address.
	MetricsSecure bool
	// HealthProbeBindAddress is --health-probe-bind-address (/healthz,
	// /readyz); Off turns them off.
	HealthProbeBindAddress string
	// PprofBindAddress is --pprof-bind-address, which serves Go's
	// /debug/pprof without authentication: on a loopback address only
	// (127.0.0.1, ::1, localhost); Off turns it off.
	PprofBindAddress string
	// StatusBindAddress is --status-bind-address, which serves the status
	// page and the dry run's report in plain HTTP without authentication,
	// for a port-forward through the API server: on a loopback address
	// only; Off turns it off.
	StatusBindAddress string
	// SweepInterval and Workers are deletion.Options'.
	SweepInterval time.Duration
	Workers       int
	// DryRun, MaxDestroysPerSecond and DestroyBurst are deletion.Options'
	// DryRun, DestroyRate and DestroyBurst (0: no rate).
	DryRun               bool
	MaxDestroysPerSecond float64
	DestroyBurst         int
	// Zap are the --zap-* flags of the log.
	Zap zap.Options
}

// Defaults returns the shared flags' defaults: the kubelet's client rate
// limit (50 a second, burst 100), metrics over HTTPS on :8443, probes on
// :8081, pprof and the status listener on loopback, the engine's own sweep interval and workers,
// destroys on and no destroy rate.
func Defaults() Flags {
	return Flags{
		KubeAPIQPS: 50, KubeAPIBurst: 100,
		MetricsBindAddress: ":8443", MetricsSecure: true,
		HealthProbeBindAddress: ":8081", PprofBindAddress: "127.0.0.1:8082", StatusBindAddress: DefaultStatusBindAddress,
		SweepInterval: deletion.DefaultSweepInterval, Workers: deletion.DefaultWorkers,
		DestroyBurst: 1,
	}
}

// Bind registers the shared flags on fs, with f's values as their defaults.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", f.Kubeconfig, "path to a kubeconfig; empty: $KUBECONFIG, the in-cluster config, then ~/.kube/config")
	fs.Float64Var(&f.KubeAPIQPS, "kube-api-qps", f.KubeAPIQPS,
		"requests a second to the API server, however the config is given, at least 1; negative: no client-side limit, the API server's priority and fairness decide. Each destroy is confirmed with one read")
	fs.IntVar(&f.KubeAPIBurst, "kube-api-burst", f.KubeAPIBurst, "requests allowed at once above --kube-api-qps; used only when it is positive")
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", f.MetricsBindAddress,
		`address of the Prometheus /metrics endpoint, of the status page `+k8s.StatusPath+` and of the dry run's report `+k8s.DryRunPath+`; "0" turns them off`)
	fs.BoolVar(&f.MetricsSecure, "metrics-secure", f.MetricsSecure,
		"serve /metrics and the pages beside it over HTTPS, only to clients whose token the API server authenticates and "+
			"authorizes (a get on the URL); false serves plain HTTP, and then only on a loopback --metrics-bind-address")
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", f.HealthProbeBindAddress, `address of the /healthz and /readyz endpoints; "0" turns them off`)
	fs.StringVar(&f.PprofBindAddress, "pprof-bind-address", f.PprofBindAddress, `address of Go's /debug/pprof endpoints, served without authentication: a loopback address only (127.0.0.1, ::1, localhost); "0" turns them off`)
	f.bindStatus(fs)
	fs.DurationVar(&f.SweepInterval, "sweep-interval", f.SweepInterval, "how often every PU is re-checked against the API")
	fs.IntVar(&f.Workers, "workers", f.Workers, "how many checks may run at once")
	fs.BoolVar(&f.DryRun, "dry-run", f.DryRun,
		"decide every destroy as usual, the confirming read included, but destroy nothing: report each PU that would go, and why, "+
			"in the log, in podsweeper_would_destroy_total and on "+k8s.DryRunPath+"; the first step of a rollout")
	fs.Float64Var(&f.MaxDestroysPerSecond, "max-destroys-per-second", f.MaxDestroysPerSecond,
		"at most this many PU destroys start a second, whatever goes wrong upstream; the rest wait for their turn, none is lost; 0: no limit")
	fs.IntVar(&f.DestroyBurst, "destroy-burst", f.DestroyBurst, "destroys that may start at once under --max-destroys-per-second")
	f.Zap.BindFlags(fs)
}

// Validate rejects shared flags the program cannot run with, with an error
// that wraps ErrUsage and names the flag: those the engine would refuse
// (deletion.Options.Validate) among them, plain HTTP metrics, pprof or the
// status listener off loopback, and an endpoint's address the
// manager could not bind, or that another endpoint binds too, so that a
// program refuses them before it connects to anything.
func (f *Flags) Validate() error {
	var err error
	switch {
	case math.IsNaN(f.KubeAPIQPS) || math.IsInf(f.KubeAPIQPS, 0):
		err = fmt.Errorf("--kube-api-qps must be a number of requests a second, or negative for no client-side limit, got %v", f.KubeAPIQPS)
	case f.KubeAPIQPS >= 0 && f.KubeAPIQPS < MinKubeAPIQPS:
		err = fmt.Errorf("--kube-api-qps %v is below %v request a second, too slow for the program's own requests: "+
			"give at least %v, or a negative value for no client-side limit", f.KubeAPIQPS, MinKubeAPIQPS, MinKubeAPIQPS)
	case f.KubeAPIQPS > 0 && f.KubeAPIBurst <= 0:
		err = fmt.Errorf("--kube-api-burst must be positive with a positive --kube-api-qps, got %d", f.KubeAPIBurst)
	case f.SweepInterval <= 0:
		err = fmt.Errorf("--sweep-interval must be positive, got %v", f.SweepInterval)
	case f.Workers <= 0:
		err = fmt.Errorf("--workers must be positive, got %d", f.Workers)
	case f.MaxDestroysPerSecond < 0:
		err = fmt.Errorf("--max-destroys-per-second must not be negative, got %v", f.MaxDestroysPerSecond)
	case math.IsInf(f.MaxDestroysPerSecond, 1):
		err = fmt.Errorf("--max-destroys-per-second must be finite (0: no limit), got %v", f.MaxDestroysPerSecond)
	case f.DestroyBurst < 1:
		err = fmt.Errorf("--destroy-burst must be at least 1, got %d", f.DestroyBurst)
	case !f.MetricsSecure && f.MetricsBindAddress != Off && !loopback(f.MetricsBindAddress):
		err = fmt.Errorf("--metrics-secure=false serves anyone who reaches --metrics-bind-address: bind it to 127.0.0.1, not %q", f.MetricsBindAddress)
	case f.PprofBindAddress != Off && !loopback(f.PprofBindAddress):
		err = fmt.Errorf("--pprof-bind-address serves /debug/pprof without authentication to anyone who reaches it: "+
			"bind it to a loopback address (127.0.0.1, ::1, localhost), not %q, or turn it off with %q", f.PprofBindAddress, Off)
	case f.validateStatus() != nil:
		err = f.validateStatus()
	default:
		// What the engine refuses, by the flag that sets it.
		for _, c := range []struct {
			flag string
			o    deletion.Options
		}{
			{fmt.Sprintf("--sweep-interval=%v", f.SweepInterval), deletion.Options{SweepInterval: f.SweepInterval}},
			{fmt.Sprintf("--workers=%d", f.Workers), deletion.Options{Workers: f.Workers}},
			// With the burst in effect, which the engine's error names.
			{fmt.Sprintf("--max-destroys-per-second=%v", f.MaxDestroysPerSecond),
				deletion.Options{DestroyRate: rate.Limit(f.MaxDestroysPerSecond), DestroyBurst: f.DestroyBurst}},
		} {
			if verr := c.o.Validate(); verr != nil {
				err = fmt.Errorf("%s: %w", c.flag, verr)
				break
			}
		}
	}
	if err == nil {
		err = checkEndpoints([]endpoint{
			{"--metrics-bind-address", f.MetricsBindAddress},
			{"--health-probe-bind-address", f.HealthProbeBindAddress},
			{"--pprof-bind-address", f.PprofBindAddress},
			f.statusEndpoint(),
		})
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return nil
}

// endpoint is the address a flag gives an endpoint.
type endpoint struct{ flag, addr string }

// checkEndpoints refuses an address the manager cannot bind (it binds each
// endpoint with net.Listen("tcp", addr)) and two endpoints on one address,
// with an error that names the flags: bindAddress says which addresses
// bind. Whether another process holds a port is not asked: that is no
// fault of the command line.
func checkEndpoints(eps []endpoint) error {
	var bound []endpoint
	addrs := map[string]*net.TCPAddr{}
	for _, e := range eps {
		if e.addr == Off {
			continue
		}
		a, err := bindAddress(e.addr)
		if err != nil {
			return fmt.Errorf("%s %q: %w (%q turns it off)", e.flag, e.addr, err, Off)
		}
		for _, b := range bound {
			if sharePort(a, addrs[b.flag]) {
				return fmt.Errorf("%s %q and %s %q bind the same address: give each endpoint its own port, or turn one off with %q",
					b.flag, b.addr, e.flag, e.addr, Off)
			}
		}
		bound, addrs[e.flag] = append(bound, e), a
	}
	return nil
}

// bindAddress returns the address net.Listen("tcp", addr) would bind, or
// why it cannot: addr is not host:port, the port is no port (0 to 65535,
// or a service's name), or the host is not one of this host's addresses
// (asked of the kernel, by binding it on a port of its choosing for a
// moment; a name is resolved as net.Listen resolves it).
func bindAddress(addr string) (*net.TCPAddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		return nil, err
	}
	a, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	if host != "" {
		l, err := net.ListenTCP("tcp", a)
		if err != nil {
			return nil, fmt.Errorf("%s is no address of this host: %w", host, err)
		}
		l.Close()
	}
	a.Port = p
	return a, nil
}

// sharePort reports whether a and b bind the same port of one address: a
// port of its own (0, chosen by the kernel) is shared by no one, and an
// unspecified host (every address) shares its port with every address.
func sharePort(a, b *net.TCPAddr) bool {
	if a.Port == 0 || a.Port != b.Port {
		return false
	}
	every := func(a *net.TCPAddr) bool { return a.IP == nil || a.IP.IsUnspecified() }
	return every(a) || every(b) || a.IP.Equal(b.IP)
}

// Parse binds the shared flags on fs beside the program's own, parses args
// and validates the shared flags. Arguments besides the flags are refused.
// Every error wraps ErrUsage (flag.ErrHelp too, for -h).
func (f *Flags) Parse(fs *flag.FlagSet, args []string) error {
	f.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	return f.Validate()
}

// loopback reports whether addr (host:port) listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RESTConfig loads the cluster's address and credentials, from --kubeconfig
// or as controller-runtime finds them, and sets the client's rate limit to
// --kube-api-qps and --kube-api-burst either way (clientcmd leaves QPS at
// 0, which client-go reads as 5 a second; controller-runtime's GetConfig
// turns the limit off). A --kubeconfig that names no file (nothing, a
// loop of links, or a directory), or that gives nothing to read within 10 s (a named pipe no
// one writes), is the command line's fault: the error wraps ErrUsage, and
// nothing was connected to. It is checked here, where the file is read,
// rather than with the other flags, so that each program refuses its own
// flags first.
func (f *Flags) RESTConfig() (*rest.Config, error) {
	var c *rest.Config
	var err error
	if f.Kubeconfig != "" {
		if err := checkKubeconfig(f.Kubeconfig); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		if c, err = loadKubeconfig(f.Kubeconfig, kubeconfigReadTimeout); err != nil {
			return nil, err
		}
	} else if c, err = ctrlconfig.GetConfig(); err != nil {
		return nil, fmt.Errorf("finding the cluster (no --kubeconfig given): %w", err)
	}
	c.QPS, c.Burst = float32(f.KubeAPIQPS), f.KubeAPIBurst
	if f.KubeAPIQPS < 0 {
		c.QPS = -1 // a negative QPS too small for a float32 would be -0, which client-go takes for its default of 5
	}
	return c, nil
}

// kubeconfigReadTimeout bounds the reading of --kubeconfig: a named pipe
// that no one writes would block it for good.
const kubeconfigReadTimeout = 10 * time.Second

// loadKubeconfig loads the kubeconfig at path, given timeout to be read:
// one not read by then (a named pipe no one writes) is a usage error, and
// its read is left behind, as the program exits. A pipe that is written
// (a shell's process substitution) is read as a file is.
func loadKubeconfig(path string, timeout time.Duration) (*rest.Config, error) {
	type answer struct {
		c   *rest.Config
		err error
	}
	done := make(chan answer, 1)
	go func() {
		c, err := clientcmd.BuildConfigFromFlags("", path)
		done <- answer{c, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-done:
		if a.err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", path, a.err)
		}
		return a.c, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: --kubeconfig %s: nothing read from it within %v (a named pipe no one writes?)", ErrUsage, path, timeout)
	}
}

// checkKubeconfig refuses a --kubeconfig that names no file: one that does
// not exist, a link to nothing, a loop of links, or a directory. Any other fault of reading
// it (its permissions, its content) is left to the loading, which names
// it.
func checkKubeconfig(path string) error {
	switch kind, _, err := pathkind.Of(path); kind {
	case pathkind.Missing, pathkind.Dangling, pathkind.Loop:
		return fmt.Errorf("--kubeconfig %s names no file: %w", path, err)
	case pathkind.Dir:
		return fmt.Errorf("--kubeconfig %s is a directory, not a kubeconfig file", path)
	}
	return nil
}

// NewLogger returns the program's logger, JSON lines on w as the --zap-*
// flags say, and makes it controller-runtime's and klog's (client-go logs
// through klog: a watch that failed, say), so that every line is a JSON
// line. Its sampling (of the lines of one message, 100 a second, then one
// in 100) never drops a line that records what became of a PU: the
// engine's (k8s.EngineRecordMessages) and keep, the program's own.
func (f *Flags) NewLogger(w io.Writer, keep ...string) logr.Logger {
	log := k8s.NewLogger(append(k8s.EngineRecordMessages(), keep...), zap.UseFlagOptions(&f.Zap), zap.WriteTo(w))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	return log
}

// ManagerOptions returns the manager's options for the shared flags: the
// metrics server (HTTPS behind controller-runtime's authentication and
// authorization filter, a TokenReview and a SubjectAccessReview per new
// client, cached; or plain HTTP on loopback), the probes, pprof, the
// logger, and the pod cache c.
func (f *Flags) ManagerOptions(log logr.Logger, c cache.Options) ctrl.Options {
	m := metricsserver.Options{BindAddress: f.MetricsBindAddress}
	if f.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return ctrl.Options{
		Cache:                  c,
		Metrics:                m,
		HealthProbeBindAddress: f.HealthProbeBindAddress,
		PprofBindAddress:       f.PprofBindAddress,
		Logger:                 log,
	}
}

// EngineOptions returns o with the shared flags' fields set: SweepInterval,
// Workers, DryRun, DestroyRate and DestroyBurst.
func (f *Flags) EngineOptions(o deletion.Options) deletion.Options {
	o.SweepInterval, o.Workers = f.SweepInterval, f.Workers
	o.DryRun = f.DryRun
	o.DestroyRate, o.DestroyBurst = rate.Limit(f.MaxDestroysPerSecond), f.DestroyBurst
	return o
}

// DryRunReport returns the report of a dry run (--dry-run), which the
// program passes to the engine as an Observer and to Serve; nil without a
// dry run.
func (f *Flags) DryRunReport() *k8s.DryRunReport {
	if !f.DryRun {
		return nil
	}
	return k8s.NewDryRunReport(0)
}

// Main runs a program's run until SIGTERM or SIGINT, with the process's
// arguments (less its name), environment and standard error, then exits
// as Exit says.
func Main(name string, run func(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error) {
	Exit(name, run(ctrl.SetupSignalHandler(), os.Args[1:], os.Getenv, os.Stderr))
}

// Exit ends the program after run returned err: status 0 for nil and for
// -h, 2 for a usage error (ErrUsage), 1 for any other, which it prints on
// stderr after the program's name.
func Exit(name string, err error) {
	os.Exit(exitCode(name, err, os.Stderr))
}

// exitCode is Exit's status for err, printed on w.
func exitCode(name string, err error, w io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintln(w, name+":", err)
		return 2
	}
	fmt.Fprintln(w, name+":", err)
	return 1
}
