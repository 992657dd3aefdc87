package program

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

func parse(t *testing.T, args ...string) (Flags, error) {
	t.Helper()
	f := Defaults()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return f, f.Parse(fs, args)
}

// TestParseRefusesWhatNoProgramRunsWith: every shared flag a program cannot
// run with is a usage error naming the flag.
func TestParseRefusesWhatNoProgramRunsWith(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		flag string
	}{
		"qps 0 (client-go's 5 a second)": {[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		"qps 0 once a float32":           {[]string{"--kube-api-qps=1e-50"}, "--kube-api-qps"},
		"qps that starves the client":    {[]string{"--kube-api-qps=1e-40"}, "--kube-api-qps 1e-40 is below 1"},
		"qps just below the floor":       {[]string{"--kube-api-qps=0.99"}, "--kube-api-qps 0.99 is below 1"},
		"qps NaN (no limiter at all)":    {[]string{"--kube-api-qps=NaN"}, "--kube-api-qps"},
		"qps infinite":                   {[]string{"--kube-api-qps=+Inf"}, "--kube-api-qps"},
		"a sweep the engine refuses":     {[]string{"--sweep-interval=1ms"}, "--sweep-interval=1ms"},
		"a sweep past MaxDuration":       {[]string{"--sweep-interval=10000h"}, "--sweep-interval=10000h"},
		"more workers than the engine's": {[]string{"--workers=20000"}, "--workers=20000"},
		"a rate below one a year":        {[]string{"--max-destroys-per-second=1e-9"}, "--max-destroys-per-second=1e-09"},
		"a rate of NaN":                  {[]string{"--max-destroys-per-second=NaN"}, "--max-destroys-per-second=NaN"},
		"an infinite rate":               {[]string{"--max-destroys-per-second=Inf"}, "--max-destroys-per-second must be finite"},
		"no burst with a qps":            {[]string{"--kube-api-qps=20", "--kube-api-burst=0"}, "--kube-api-burst"},
		"zero interval":                  {[]string{"--sweep-interval=0s"}, "--sweep-interval"},
		"negative workers":               {[]string{"--workers=-1"}, "--workers"},
		"negative destroy rate":          {[]string{"--max-destroys-per-second=-1"}, "--max-destroys-per-second"},
		"no destroy burst":               {[]string{"--destroy-burst=0"}, "--destroy-burst"},
		"no destroy burst with a rate":   {[]string{"--max-destroys-per-second=5", "--destroy-burst=0"}, "usage: --destroy-burst must"},
		"plain metrics for everyone":     {[]string{"--metrics-secure=false", "--metrics-bind-address=:8080"}, "--metrics-bind-address"},
		"unknown flag":                   {[]string{"--nope"}, "-nope"},
		"an argument":                    {[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parse(t, c.args...)
		require.ErrorIs(t, err, ErrUsage, name)
		assert.Contains(t, err.Error(), c.flag, name)
	}
	_, err := parse(t, "--kube-api-qps=-1", "--kube-api-burst=0")
	assert.NoError(t, err, "no client-side limit needs no burst")
	_, err = parse(t, "--kube-api-qps=1")
	assert.NoError(t, err, "the floor itself is taken")
	_, err = parse(t, "-h")
	assert.ErrorIs(t, err, flag.ErrHelp)
}

// TestPprofIsServedOnLoopbackOnly: --pprof-bind-address serves
// /debug/pprof without authentication, "on loopback" as its help says: an
// address off loopback, every address included, is a usage error naming
// the flag; a loopback one, and "0", are not.
func TestPprofIsServedOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{":8082", "0.0.0.0:8082", "[::]:8082", "192.0.2.1:8082"} {
		_, err := parse(t, "--pprof-bind-address="+addr)
		require.ErrorIs(t, err, ErrUsage, addr)
		assert.Contains(t, err.Error(), "--pprof-bind-address", addr)
		assert.Contains(t, err.Error(), "loopback", addr)
	}
	for _, addr := range []string{"0", "127.0.0.1:0", "localhost:0"} {
		_, err := parse(t, "--pprof-bind-address="+addr)
		require.NoError(t, err, addr)
	}
}

// TestStatusIsServedOnLoopbackOnly: --status-bind-address serves the
// status page without authentication, "on loopback" as its help says: an
// address off loopback, every address included, is a usage error naming
// the flag; a loopback one, and "0", are not; and it shares no port with
// another endpoint.
func TestStatusIsServedOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{":8084", "0.0.0.0:8084", "[::]:8084", "192.0.2.1:8084"} {
		_, err := parse(t, "--status-bind-address="+addr)
		require.ErrorIs(t, err, ErrUsage, addr)
		assert.Contains(t, err.Error(), "--status-bind-address", addr)
		assert.Contains(t, err.Error(), "loopback", addr)
	}
	for _, addr := range []string{"0", "127.0.0.1:0", "localhost:0"} {
		_, err := parse(t, "--status-bind-address="+addr)
		require.NoError(t, err, addr)
	}
	_, err := parse(t, "--pprof-bind-address=127.0.0.1:9100", "--status-bind-address=127.0.0.1:9100")
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "--status-bind-address")
	f, err := parse(t)
	require.NoError(t, err)
	assert.Equal(t, DefaultStatusBindAddress, f.StatusBindAddress, "on loopback by default")
}

// TestParseRefusesAddressesNoEndpointCanBind: an endpoint's address that
// net.Listen cannot bind, as the manager binds it, and two endpoints on
// one address are usage errors naming the flags, not a failure at start.
func TestParseRefusesAddressesNoEndpointCanBind(t *testing.T) {
	for name, c := range map[string]struct {
		args  []string
		flags []string
	}{
		"no port":                  {[]string{"--metrics-bind-address=8443"}, []string{"--metrics-bind-address"}},
		"malformed":                {[]string{"--health-probe-bind-address=::8081"}, []string{"--health-probe-bind-address"}},
		"a port past 65535":        {[]string{"--health-probe-bind-address=:70000"}, []string{"--health-probe-bind-address"}},
		"a negative port":          {[]string{"--pprof-bind-address=127.0.0.1:-1"}, []string{"--pprof-bind-address"}},
		"an address not local":     {[]string{"--pprof-bind-address=192.0.2.1:8082"}, []string{"--pprof-bind-address"}},
		"a host name not resolved": {[]string{"--metrics-bind-address=nowhere.invalid:8443"}, []string{"--metrics-bind-address"}},
		"empty":                    {[]string{"--health-probe-bind-address="}, []string{"--health-probe-bind-address"}},
		"one address twice": {[]string{"--health-probe-bind-address=127.0.0.1:9100", "--pprof-bind-address=127.0.0.1:9100"},
			[]string{"--health-probe-bind-address", "--pprof-bind-address"}},
		"a port of every address and one of its addresses": {[]string{"--metrics-bind-address=:9100", "--pprof-bind-address=127.0.0.1:9100"},
			[]string{"--metrics-bind-address", "--pprof-bind-address"}},
		"every address, spelled two ways": {[]string{"--metrics-bind-address=:9100", "--health-probe-bind-address=0.0.0.0:9100"},
			[]string{"--metrics-bind-address", "--health-probe-bind-address"}},
		"one port by its service's name and by number": {[]string{"--metrics-bind-address=127.0.0.1:http", "--health-probe-bind-address=:80"},
			[]string{"--metrics-bind-address", "--health-probe-bind-address"}},
	} {
		_, err := parse(t, c.args...)
		require.ErrorIs(t, err, ErrUsage, name)
		for _, f := range c.flags {
			assert.Contains(t, err.Error(), f, name)
		}
	}
	for _, args := range [][]string{
		{"--metrics-bind-address=localhost:9100", "--health-probe-bind-address=127.0.0.1:9101", "--pprof-bind-address=0"},
		{"--metrics-bind-address=:0", "--health-probe-bind-address=:0", "--pprof-bind-address=127.0.0.1:0"}, // any free port, each its own
		{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--pprof-bind-address=0"},
	} {
		_, err := parse(t, args...)
		assert.NoError(t, err, "%q", args)
	}
}

// TestWhatParseTakesTheEngineTakes: the engine takes the options
// EngineOptions makes of any command line Parse takes, so that a program
// refuses a bad one (status 2) before it connects to the cluster, not
// after (status 1).
func TestWhatParseTakesTheEngineTakes(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--sweep-interval=100ms", "--workers=10000", "--max-destroys-per-second=1e-7"},
		{"--sweep-interval=8760h", "--workers=1", "--max-destroys-per-second=1e9", "--destroy-burst=1000000"},
	} {
		f, err := parse(t, args...)
		require.NoError(t, err, "%v", args)
		assert.NoError(t, f.EngineOptions(deletion.Options{}).Validate(), "%v", args)
	}
}

// TestPlainMetricsOnLoopbackOnly: --metrics-secure=false is taken on a
// loopback address, or with the metrics off.
func TestPlainMetricsOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080", Off} {
		f, err := parse(t, "--metrics-secure=false", "--metrics-bind-address="+addr)
		require.NoError(t, err, addr)
		assert.False(t, f.MetricsSecure)
	}
	for _, addr := range []string{":8080", "0.0.0.0:8080", "10.0.0.1:8080", "nonsense"} {
		_, err := parse(t, "--metrics-secure=false", "--metrics-bind-address="+addr)
		assert.ErrorIs(t, err, ErrUsage, addr)
	}
}

// TestClientRateLimitIsTheSameHoweverTheConfigIsGiven: --kubeconfig and
// $KUBECONFIG give the client the same rate limit, the flags': clientcmd
// alone would leave QPS at 0, which client-go reads as 5 requests a
// second, and every destroy costs a confirming read.
func TestClientRateLimitIsTheSameHoweverTheConfigIsGiven(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults":        nil,
		"with flags":      {"--kube-api-qps=30", "--kube-api-burst=60"},
		"no client limit": {"--kube-api-qps=-1"},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := parse(t, args...)
			require.NoError(t, err)
			testkube.SameRateLimitHoweverGiven(t, func(kubeconfig string, qps float64, burst int) (*rest.Config, error) {
				g := f
				g.Kubeconfig, g.KubeAPIQPS, g.KubeAPIBurst = kubeconfig, qps, burst
				return g.RESTConfig()
			}, f.KubeAPIQPS, f.KubeAPIBurst)
		})
	}
}

// TestAKubeconfigThatNamesNoFileIsAUsageError: "A command line the program
// cannot run with is refused with status 2 before it connects to
// anything": a --kubeconfig that does not exist, or is a directory, is a
// usage error that names the flag; one that exists but cannot be loaded is
// not the command line's fault alone, and is no usage error.
func TestAKubeconfigThatNamesNoFileIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	for name, path := range map[string]string{"missing": filepath.Join(dir, "missing"), "a directory": dir} {
		f := Defaults()
		f.Kubeconfig = path
		_, err := f.RESTConfig()
		require.ErrorIs(t, err, ErrUsage, name)
		assert.Contains(t, err.Error(), "--kubeconfig", name)
		assert.Equal(t, 2, exitCode("p", err, io.Discard), name)
	}
	f := Defaults()
	f.Kubeconfig = filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(f.Kubeconfig, []byte("{not yaml"), 0o600))
	_, err := f.RESTConfig()
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "--kubeconfig")
}

// TestALoopingKubeconfigNamesNoFileIsAUsageError: "A --kubeconfig that
// names no file ... is the command line's fault: the error wraps ErrUsage":
// a loop of links is there and names no file, for every process.
func TestALoopingKubeconfigNamesNoFileIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop1")
	require.NoError(t, os.Symlink(filepath.Join(dir, "loop2"), loop))
	require.NoError(t, os.Symlink(loop, filepath.Join(dir, "loop2")))
	f := Defaults()
	f.Kubeconfig = loop
	_, err := f.RESTConfig()
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "--kubeconfig")
	assert.Equal(t, 2, exitCode("p", err, io.Discard))
}

// TestAKubeconfigPipeNoOneWritesIsAUsageError: "A command line the program
// cannot run with is refused with status 2 before it connects to
// anything", never a hang: a --kubeconfig that is a named pipe no one
// writes is refused once its read is given up; a pipe that is written (a
// shell's process substitution) is read as a file is.
func TestAKubeconfigPipeNoOneWritesIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	silent := filepath.Join(dir, "silent")
	require.NoError(t, syscall.Mkfifo(silent, 0o600))
	_, err := loadKubeconfig(silent, 50*time.Millisecond)
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "--kubeconfig")
	assert.Equal(t, 2, exitCode("p", err, io.Discard))

	written := filepath.Join(dir, "written")
	require.NoError(t, syscall.Mkfifo(written, 0o600))
	go func() {
		w, err := os.OpenFile(written, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		_, _ = w.WriteString("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\n" +
			"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
	}()
	c, err := loadKubeconfig(written, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", c.Host)
}

// TestEngineOptionsCarryTheRails: the dry run, the destroy rate and its
// burst, the sweep interval and the workers reach the engine's options,
// and the program's own options are kept.
func TestEngineOptionsCarryTheRails(t *testing.T) {
	f, err := parse(t, "--dry-run", "--max-destroys-per-second=100", "--destroy-burst=10", "--sweep-interval=30s", "--workers=3")
	require.NoError(t, err)
	o := f.EngineOptions(deletion.Options{NodeName: "n", DestroyTerminated: true})
	assert.Equal(t, deletion.Options{NodeName: "n", DestroyTerminated: true, DryRun: true, DestroyRate: rate.Limit(100), DestroyBurst: 10,
		SweepInterval: 30 * time.Second, Workers: 3}, o)
	assert.NotNil(t, f.DryRunReport(), "a dry run has a report")
	f, err = parse(t)
	require.NoError(t, err)
	assert.Nil(t, f.DryRunReport(), "no dry run, no report")
	assert.Zero(t, f.EngineOptions(deletion.Options{}).DestroyRate, "no destroy rate by default")
}

// TestExitStatus: 0 for success and -h, 2 for a usage error, 1 for any
// other, printed after the program's name.
func TestExitStatus(t *testing.T) {
	var w bytes.Buffer
	assert.Equal(t, 0, exitCode("p", nil, &w))
	assert.Equal(t, 0, exitCode("p", flagErr(flag.ErrHelp), &w))
	assert.Empty(t, w.String())
	_, err := parse(t, "--workers=0")
	assert.Equal(t, 2, exitCode("p", err, &w))
	assert.Contains(t, w.String(), "p: usage: --workers")
	w.Reset()
	assert.Equal(t, 1, exitCode("p", errors.New("boom"), &w))
	assert.Equal(t, "p: boom\n", w.String())
}

func flagErr(err error) error { return errors.Join(ErrUsage, err) }

// fakeCache syncs when synced is closed.
type fakeCache struct{ synced chan struct{} }

func (f fakeCache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-f.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// TestCacheSyncedReadiness: the check fails, without hanging the probe,
// until the cache has synced, and passes from then on.
func TestCacheSyncedReadiness(t *testing.T) {
	c := fakeCache{synced: make(chan struct{})}
	ready := CacheSynced(c)

	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	start := time.Now()
	err := ready(req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not synced")
	assert.Less(t, time.Since(start), 5*cacheSyncWait, "the probe waits at most cacheSyncWait")

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	require.Error(t, ready(req.WithContext(gone)), "a probe whose request ended does not wait")

	close(c.synced)
	assert.NoError(t, ready(req))
}

// TestARateRefusedNamesTheBurstInEffect: a destroy rate below one a year is
// refused naming the burst the engine would have run with (--destroy-burst,
// 1 by default), not a burst of 0.
func TestARateRefusedNamesTheBurstInEffect(t *testing.T) {
	_, err := parse(t, "--max-destroys-per-second=1e-9")
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "DestroyBurst 1:")
	_, err = parse(t, "--max-destroys-per-second=1e-9", "--destroy-burst=7")
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "DestroyBurst 7:")
}
