package program

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

// TestNodeFlagsRefuseWhatNoNodeProgramRunsWith: --node is required and
// --cri-endpoint must name a Unix socket, both before anything connects;
// no --cri-endpoint is taken (a program that needs the runtime refuses it
// itself).
func TestNodeFlagsRefuseWhatNoNodeProgramRunsWith(t *testing.T) {
	parseNode := func(getenv func(string) string, args ...string) (NodeFlags, error) {
		var n NodeFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		n.Bind(fs, getenv, "what it asks")
		require.NoError(t, fs.Parse(args))
		return n, n.Validate()
	}
	noEnv := func(string) string { return "" }
	for name, args := range map[string][]string{
		"no node":         nil,
		"a TCP runtime":   {"--node=n", "--cri-endpoint=tcp://127.0.0.1:1"},
		"a relative path": {"--node=n", "--cri-endpoint=unix://containerd.sock"},
		"no node's name":  {"--node=Not A Node/x"},
	} {
		_, err := parseNode(noEnv, args...)
		assert.ErrorIs(t, err, ErrUsage, name)
	}
	n, err := parseNode(func(k string) string { return map[string]string{"NODE_NAME": "node-a"}[k] })
	require.NoError(t, err)
	assert.Equal(t, NodeFlags{Node: "node-a", CRIEndpoint: DefaultCRIEndpoint}, n, "--node defaults to $NODE_NAME, the runtime to containerd's")
	_, err = parseNode(noEnv, "--node=n", "--cri-endpoint=")
	assert.NoError(t, err)
}

// TestPodCacheFlagsAreSlimByDefault: --slim-pod-cache is on by default and
// keeps only what podsweeper reads; false keeps controller-runtime's cache.
func TestPodCacheFlagsAreSlimByDefault(t *testing.T) {
	var c PodCacheFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Bind(fs)
	require.NoError(t, fs.Parse(nil))
	assert.True(t, c.Slim)
	assert.NotEmpty(t, c.Options().ByObject, "a slim cache transforms its pods")
	require.NoError(t, fs.Parse([]string{"--slim-pod-cache=false"}))
	assert.Empty(t, c.Options().ByObject)
}

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestBuildAssemblesANodeAndAClusterProgram: against a real API server,
// Build wires an engine with a node to that node's pods and one without to
// every pod (the wrong wiring refuses the engine); Beside runs with the
// engine Build made; /readyz has the shared checks and the program's own,
// and leaves out a nil one.
func TestBuildAssemblesANodeAndAClusterProgram(t *testing.T) {
	rc, _ := testkube.StartAPIServer(t)
	for _, node := range []string{"node-a", ""} {
		t.Run("node="+node, func(t *testing.T) {
			f := Defaults()
			f.MetricsBindAddress, f.PprofBindAddress, f.HealthProbeBindAddress = Off, Off, freeAddr(t)

			f.StatusBindAddress = freeAddr(t)
			beside := make(chan *deletion.Engine, 1)
			mgr, engine, err := Build(f, Options{Name: "test", Logger: logr.Discard(), Config: rest.CopyConfig(rc), Registry: prometheus.NewRegistry(),
				Policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
				Engine: deletion.Options{NodeName: node},
				Beside: []func(context.Context, *deletion.Engine) error{func(ctx context.Context, e *deletion.Engine) error {
					beside <- e
					<-ctx.Done()
					return nil
				}},
				Ready: map[string]healthz.Checker{"own": func(*http.Request) error { return errors.New("not yet") }, "none": nil},
			})
			require.NoError(t, err)
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			t.Cleanup(func() {
				stop()
				assert.NoError(t, <-done)
			})
			select {
			case e := <-beside:
				assert.Same(t, engine, e, "Beside runs with the engine Build made")
			case <-time.After(30 * time.Second):
				t.Fatal("Beside did not run")
			}
			var body string
			require.Eventually(t, func() bool {
				body = readBody(t, "http://"+f.HealthProbeBindAddress+"/readyz?verbose=1")
				return strings.Contains(body, "[+]podsweeper ok")
			}, 30*time.Second, 20*time.Millisecond, "the engine runs and keeps up")
			assert.Contains(t, body, "[+]pod-cache ok")
			assert.Contains(t, body, "[-]own failed")
			assert.NotContains(t, body, "none", "a nil check is left out")
		})
	}
}

// readBody returns the body url answers with, whatever its status; "" if
// it does not answer.
func readBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestBuildReleasesWhatItAcquiredWhenALaterStepFails: when a step of
// Build fails after the endpoints' addresses are bound and the metrics
// registered (here the last, Serve, whose backlog metrics the registry
// refuses), Build releases them all: a second Build on the same addresses
// and registry binds and registers.
func TestBuildReleasesWhatItAcquiredWhenALaterStepFails(t *testing.T) {
	rc, _ := testkube.StartAPIServer(t)
	f := Defaults()
	f.MetricsBindAddress, f.HealthProbeBindAddress, f.PprofBindAddress = Off, freeAddr(t), freeAddr(t)

	f.StatusBindAddress = freeAddr(t)
	reg := &refusingBacklog{Registry: prometheus.NewRegistry(), refuse: true}
	o := Options{Name: "test", Logger: logr.Discard(), Registry: reg, Config: rest.CopyConfig(rc),
		Policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		Engine: deletion.Options{NodeName: "node-a"},
	}
	_, _, err := Build(f, o)
	require.ErrorIs(t, err, errRefused, "the last step fails")
	for _, addr := range []string{f.HealthProbeBindAddress, f.PprofBindAddress} {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err, "%s is released", addr)
		require.NoError(t, l.Close())
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	assert.Empty(t, families, "the engine's metrics are unregistered")

	reg.refuse = false
	_, _, err = Build(f, o)
	require.NoError(t, err, "a second Build on the same addresses and registry")
}

var errRefused = errors.New("refused")

// refusingBacklog is a registry that refuses the backlog metrics while
// refuse is set.
type refusingBacklog struct {
	*prometheus.Registry
	refuse bool
}

func (r *refusingBacklog) Register(c prometheus.Collector) error {
	if _, ok := c.(*k8s.BacklogCollector); ok && r.refuse {
		return errRefused
	}
	return r.Registry.Register(c)
}

// TestBuildAfterStartReturnedRegistersAgain: "Once Build has returned a
// manager, its Start serves them and releases them when it returns": once
// Start returned, the endpoints' addresses are free and the metrics Build
// registered are unregistered, so that a second Build on the same
// addresses and registry binds and registers them.
func TestBuildAfterStartReturnedRegistersAgain(t *testing.T) {
	rc, _ := testkube.StartAPIServer(t)
	f := Defaults()
	f.MetricsBindAddress, f.HealthProbeBindAddress, f.PprofBindAddress = Off, freeAddr(t), freeAddr(t)

	f.StatusBindAddress = freeAddr(t)
	reg := prometheus.NewRegistry()
	o := Options{Name: "test", Logger: logr.Discard(), Registry: reg, Config: rest.CopyConfig(rc),
		Policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		Engine: deletion.Options{NodeName: "node-a"},
	}
	mgr, _, err := Build(f, o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + f.HealthProbeBindAddress + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, 30*time.Second, 50*time.Millisecond, "the probes are served")
	families, err := reg.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, families, "the metrics are registered while Start runs")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return")
	}

	for _, addr := range []string{f.HealthProbeBindAddress, f.PprofBindAddress} {
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err, "%s is released", addr)
		require.NoError(t, l.Close())
	}
	families, err = reg.Gather()
	require.NoError(t, err)
	assert.Empty(t, families, "the metrics are unregistered")
	_, _, err = Build(f, o)
	require.NoError(t, err, "a second Build on the same addresses and registry")
}

// TestStatusListenerServesTheStatusPages: --status-bind-address serves the
// status page and, in a dry run, its report, in plain HTTP without
// authentication, the same JSON as beside /metrics, and the program's own
// pages (Options.Status); nothing else.
func TestStatusListenerServesTheStatusPages(t *testing.T) {
	rc, _ := testkube.StartAPIServer(t)
	for _, dryRun := range []bool{false, true} {
		f := Defaults()
		f.MetricsBindAddress, f.HealthProbeBindAddress, f.PprofBindAddress, f.StatusBindAddress = Off, Off, Off, freeAddr(t)
		f.DryRun = dryRun
		o := Options{Name: "test", Logger: logr.Discard(), Registry: prometheus.NewRegistry(), Config: rest.CopyConfig(rc),
			Policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
			Engine: deletion.Options{NodeName: "node-a"},
			Status: map[string]http.Handler{k8s.StatusPath + "/own": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "own page "+r.URL.Query().Get("q"))
			})},
		}
		mgr, _, err := Build(f, o)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		get := func(path string) (int, string) {
			resp, err := http.Get("http://" + f.StatusBindAddress + path)
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		require.Eventually(t, func() bool { code, _ := get(k8s.StatusPath); return code == http.StatusOK }, 30*time.Second, 50*time.Millisecond,
			"the status page is served")
		_, body := get(k8s.StatusPath)
		assert.JSONEq(t, "[]", body, "no PU")
		code, body := get(k8s.DryRunPath)
		if dryRun {
			assert.Equal(t, http.StatusOK, code)
			assert.JSONEq(t, `{"total":0,"reports":[]}`, body)
		} else {
			assert.Equal(t, http.StatusNotFound, code, "no report without a dry run")
		}
		code, body = get(k8s.StatusPath + "/own?q=x")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "own page x", body, "the program's own page")
		code, _ = get("/metrics")
		assert.Equal(t, http.StatusNotFound, code, "the metrics are not there")
		cancel()
		require.NoError(t, <-done)
	}
	// A page of its own outside the status page's path, or in the report's place, is refused.
	for _, path := range []string{"/elsewhere", k8s.DryRunPath, k8s.StatusPath} {
		f := Defaults()
		f.MetricsBindAddress, f.HealthProbeBindAddress, f.PprofBindAddress, f.StatusBindAddress = Off, Off, Off, freeAddr(t)
		o := Options{Name: "test", Logger: logr.Discard(), Registry: prometheus.NewRegistry(), Config: rest.CopyConfig(rc),
			Policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
			Engine: deletion.Options{NodeName: "node-a"}, Status: map[string]http.Handler{path: http.NotFoundHandler()},
		}
		_, _, err := Build(f, o)
		assert.ErrorContains(t, err, "a program's own page is a path under", path)
		l, err := net.Listen("tcp", f.StatusBindAddress)
		require.NoError(t, err, "the status listener's address is released")
		require.NoError(t, l.Close())
	}
}

// Build tells the dry run's report before the program's own Observer: a PU the engine dropped has left the status
// page, and the report is the only page that tells it, which a journal's slow commit must not delay.
func TestTheDryRunReportHearsADropBeforeTheProgramsObserver(t *testing.T) {
	rc, _ := testkube.StartAPIServer(t)
	f := Defaults()
	f.MetricsBindAddress, f.HealthProbeBindAddress, f.PprofBindAddress, f.StatusBindAddress = Off, Off, Off, freeAddr(t)
	f.DryRun = true
	committing, commit := make(chan struct{}), make(chan struct{})
	journal := deletion.ObserverFunc(func(ev deletion.Event) {
		if ev.Kind == deletion.EventWouldDestroy {
			close(committing)
			<-commit // a slow commit of the drop
		}
	})
	o := Options{Name: "test", Logger: logr.Discard(), Registry: prometheus.NewRegistry(), Config: rest.CopyConfig(rc),
		Policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		Engine: deletion.Options{NodeName: "node-a", Observer: journal}}
	mgr, engine, err := Build(f, o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.NoError(t, engine.Track(ports.PU{PUID: "gone-uid", Pod: types.NamespacedName{Namespace: "apps", Name: "gone"}}))
	select {
	case <-committing:
	case <-time.After(30 * time.Second):
		t.Fatal("the dry run did not report the gone pod's PU")
	}
	defer close(commit)
	body := readBody(t, "http://"+f.StatusBindAddress+k8s.DryRunPath)
	assert.Contains(t, body, "gone-uid", "while the journal commits the drop, the report tells it")
}
