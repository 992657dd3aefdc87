package main

import (
	"bytes"
	"context"
	"flag"
	"github.com/podsweeper/podsweeper/examples/node-agent/agent"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	fakeremote "k8s.io/cri-client/pkg/fake"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
	"github.com/podsweeper/podsweeper/program"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseFlagsDefaults(t *testing.T) {
	cfg, err := agent.ParseFlags(nil, env(map[string]string{"NODE_NAME": "node-a"}), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "node-a", cfg.Node.Node, "--node defaults to $NODE_NAME")
	assert.Equal(t, ":8443", cfg.MetricsBindAddress)
	assert.True(t, cfg.MetricsSecure, "metrics are served over HTTPS to authorized clients by default")
	assert.Equal(t, ":8081", cfg.HealthProbeBindAddress)
	assert.Equal(t, "unix:///run/containerd/containerd.sock", cfg.Node.CRIEndpoint, "--cri-endpoint defaults to containerd's socket")
	assert.Equal(t, deletion.DefaultSweepInterval, cfg.SweepInterval)
	assert.Equal(t, deletion.DefaultWorkers, cfg.Workers)
	assert.Equal(t, "/var/lib/podsweeper/journal.db", cfg.StateFile)
	assert.False(t, cfg.AllPods, "host-network and mirror pods are skipped by default")
	assert.False(t, cfg.DestroyTerminated, "a finished pod's PU is kept as long as its pod object by default")
	assert.Empty(t, cfg.Kubeconfig)
	assert.False(t, cfg.DryRun, "destroys are on by default")
	assert.Zero(t, cfg.MaxDestroysPerSecond, "no destroy rate by default")
	assert.Equal(t, "127.0.0.1:8082", cfg.PprofBindAddress, "pprof on loopback by default")
	assert.Equal(t, "127.0.0.1:8084", cfg.StatusBindAddress, "the status listener on loopback by default")
	assert.True(t, cfg.PodCache.Slim, "the pod cache is slim by default")
	assert.Equal(t, cri.DefaultCacheMaxAge, cfg.CRICacheMaxAge, "the periodic checks read a list of sandboxes at most an interval old")
	assert.False(t, cfg.DestroyDeadSandboxes, "a dead sandbox's PU is kept until its pod is gone or has a new sandbox by default")
}

func TestParseFlagsOverrides(t *testing.T) {
	cfg, err := agent.ParseFlags([]string{
		"--kubeconfig=/k", "--node=node-b", "--metrics-bind-address=0", "--health-probe-bind-address=:9000",
		"--sweep-interval=30s", "--workers=16", "--zap-devel", "--cri-endpoint=unix:///var/run/crio/crio.sock", "--state-file=/s/j.db",
		"--all-pods", "--destroy-terminated", "--kube-api-qps=20", "--kube-api-burst=40", "--dry-run",
		"--max-destroys-per-second=2.5", "--destroy-burst=3", "--pprof-bind-address=0", "--slim-pod-cache=false", "--cri-cache-max-age=0",
		"--destroy-dead-sandboxes", "--status-bind-address=localhost:9184",
	}, env(map[string]string{"NODE_NAME": "node-a"}), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, agent.Config{
		Flags: program.Flags{Kubeconfig: "/k", KubeAPIQPS: 20, KubeAPIBurst: 40, DryRun: true, MaxDestroysPerSecond: 2.5, DestroyBurst: 3,
			PprofBindAddress: "0", StatusBindAddress: "localhost:9184", MetricsBindAddress: "0", MetricsSecure: true, HealthProbeBindAddress: ":9000",
			SweepInterval: 30 * time.Second, Workers: 16, Zap: cfg.Zap},
		Node: program.NodeFlags{Node: "node-b", CRIEndpoint: "unix:///var/run/crio/crio.sock"}, StateFile: "/s/j.db", AllPods: true,
		DestroyTerminated: true, DestroyDeadSandboxes: true,
	}, cfg)
	assert.True(t, cfg.Zap.Development)
}

func TestParseFlagsErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no node":                          nil,
		"empty node":                       {"--node="},
		"zero interval":                    {"--node=n", "--sweep-interval=0s"},
		"negative":                         {"--node=n", "--workers=-1"},
		"zero workers":                     {"--node=n", "--workers=0"},
		"negative cri cache age":           {"--node=n", "--cri-cache-max-age=-1s"},
		"cri cache age past MaxDuration":   {"--node=n", "--cri-cache-max-age=10000h"},
		"unknown flag":                     {"--node=n", "--nope"},
		"bad duration":                     {"--node=n", "--sweep-interval=soon"},
		"extra argument":                   {"--node=n", "extra"},
		"tcp runtime":                      {"--node=n", "--cri-endpoint=tcp://127.0.0.1:1234"},
		"relative socket":                  {"--node=n", "--cri-endpoint=unix://containerd.sock"},
		"no state file":                    {"--node=n", "--state-file="},
		"dead sandboxes without a runtime": {"--node=n", "--cri-endpoint=", "--destroy-dead-sandboxes"},
		"plain metrics on every interface": {"--node=n", "--metrics-secure=false", "--metrics-bind-address=:8080"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := agent.ParseFlags(args, env(nil), &bytes.Buffer{})
			require.ErrorIs(t, err, program.ErrUsage)
		})
	}
}

func TestParseFlagsPlainMetricsOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080", "0"} {
		cfg, err := agent.ParseFlags([]string{"--node=n", "--metrics-secure=false", "--metrics-bind-address=" + addr}, env(nil), &bytes.Buffer{})
		require.NoError(t, err, addr)
		assert.False(t, cfg.MetricsSecure)
	}
}

func TestParseFlagsHelp(t *testing.T) {
	var stderr bytes.Buffer
	_, err := agent.ParseFlags([]string{"-h"}, env(nil), &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, stderr.String(), "-sweep-interval")
}

func TestRunRejectsBadCommandLine(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--workers=0", "--node=n"}, os.Getenv, &stderr)
	require.ErrorIs(t, err, program.ErrUsage)
}

// A --kubeconfig that names no file is the command line's fault: status 2
// (program.ErrUsage), naming the flag.
func TestRunRefusesAMissingKubeconfig(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--node=n", "--kubeconfig=" + t.TempDir() + "/missing", "--state-file=" + t.TempDir() + "/j.db"}, os.Getenv, &stderr)
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--kubeconfig")
}

func TestDestroyerLogsTheDestroy(t *testing.T) {
	var out strings.Builder
	log := funcr.New(func(prefix, args string) { out.WriteString(prefix + " " + args + "\n") }, funcr.Options{})
	ev := ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "web"}, SandboxID: "sb", Reason: ports.ReasonPodGone}

	require.NoError(t, destroyer(log).DestroyPU(context.Background(), ev))

	assert.Contains(t, out.String(), `"msg"="destroying PU"`)
	assert.Contains(t, out.String(), `"puID"="uid-1"`)
	assert.Contains(t, out.String(), `"reason"="PodGone"`)
}

// A state file that is not a journal stops the agent before it does
// anything, and is left as it is.
func TestRunFailsOnABadStateFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "journal.db")
	require.NoError(t, os.WriteFile(state, []byte("not a journal"), 0o600))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600))

	err := run(context.Background(), []string{"--node=n", "--kubeconfig=" + kubeconfig, "--state-file=" + state}, os.Getenv, &bytes.Buffer{})

	require.ErrorIs(t, err, bolt.ErrNotJournal)
	assert.Contains(t, err.Error(), "--state-file")
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	assert.Equal(t, "not a journal", string(b))
}

// A --state-file that names a directory, or sits in a directory that does
// not exist, is the command line's fault: refused with status 2
// (program.ErrUsage) before the agent connects to anything, and left as it
// is.
func TestAStateFileThatIsADirectoryIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	for name, state := range map[string]string{
		"a directory":            dir,
		"in a missing directory": filepath.Join(dir, "not-mounted", "journal.db"),
	} {
		err := run(context.Background(), []string{"--node=n", "--kubeconfig=" + filepath.Join(dir, "no-kubeconfig"), "--state-file=" + state},
			os.Getenv, &bytes.Buffer{})
		require.ErrorIs(t, err, program.ErrUsage, name)
		assert.Contains(t, err.Error(), "--state-file", name)
	}
	assert.DirExists(t, dir)
}

// A --state-file that names anything but a file is refused with status 2
// (program.ErrUsage) before the agent connects to anything: a loop of
// links names none.
func TestAStateFileThatIsALoopOfLinksIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop1")
	require.NoError(t, os.Symlink(filepath.Join(dir, "loop2"), loop))
	require.NoError(t, os.Symlink(loop, filepath.Join(dir, "loop2")))
	err := run(context.Background(), []string{"--node=n", "--kubeconfig=" + filepath.Join(dir, "no-kubeconfig"), "--state-file=" + loop},
		os.Getenv, &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--state-file")
}

func TestParseFlagsCRIOff(t *testing.T) {
	cfg, err := agent.ParseFlags([]string{"--node=n", "--cri-endpoint="}, env(nil), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Empty(t, cfg.Node.CRIEndpoint)
}

// Without the runtime's socket the agent runs without an extractor, says
// so once, and its readiness check keeps saying so.
func TestSandboxesWithoutSocket(t *testing.T) {
	var logs testkube.Lines
	endpoint := "unix://" + filepath.Join(t.TempDir(), "containerd.sock")

	x, ready, err := program.NodeFlags{CRIEndpoint: endpoint}.Runtime(logs.Logger())

	require.NoError(t, err)
	assert.Nil(t, x)
	require.NotNil(t, ready)
	for range 3 {
		err := ready(httptest.NewRequest(http.MethodGet, "/readyz", nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "sandbox restarts are not detected")
	}
	assert.Equal(t, 1, logs.Count("sandbox restarts are not detected"), "logged once, not at every probe")
}

// With the socket, the extractor asks the runtime, and readiness follows
// whether the runtime answers.
func TestSandboxesWithRuntime(t *testing.T) {
	var logs testkube.Lines
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	rt := fakeremote.NewFakeRemoteRuntime()
	require.NoError(t, rt.Start(endpoint))
	t.Cleanup(rt.Stop)

	x, ready, err := program.NodeFlags{CRIEndpoint: endpoint}.Runtime(logs.Logger())
	require.NoError(t, err)
	require.NotNil(t, x)
	t.Cleanup(func() { assert.NoError(t, x.Close()) })
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	assert.NoError(t, ready(req))
	assert.Equal(t, 0, logs.Count("not detected"))

	rt.Stop()
	assert.Error(t, ready(req), "readiness fails while the runtime does not answer")
}

func TestSandboxesOff(t *testing.T) {
	var logs testkube.Lines
	x, ready, err := program.NodeFlags{}.Runtime(logs.Logger())
	require.NoError(t, err)
	assert.Nil(t, x)
	assert.Nil(t, ready)
	assert.Equal(t, 1, logs.Count("sandbox restarts are not detected"))
}

// TestAStateFileLinkIntoAMissingDirectoryIsAUsageError: a --state-file that
// is a link into a directory that does not exist (a hostPath mounted behind
// it, missing) is refused as a missing directory is: status 2, naming the
// flag, not status 1 for a file the journal could not create.
func TestAStateFileLinkIntoAMissingDirectoryIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "journal.db")
	require.NoError(t, os.Symlink(filepath.Join(dir, "not-mounted", "journal.db"), link))
	err := run(context.Background(), []string{"--node=n", "--cri-endpoint=", "--state-file=" + link}, env(nil), &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--state-file")
	assert.NoDirExists(t, filepath.Join(dir, "not-mounted"))
}

// TestAStateFileInAMissingDirectoryIsAUsageError: the journal's directory
// is not created (a hostPath the DaemonSet does not mount, a typo, would
// keep the journal where it does not survive a restart): a --state-file in
// a directory that does not exist is a usage error (status 2) naming the
// flag, before the agent connects to anything.
func TestAStateFileInAMissingDirectoryIsAUsageError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "not-mounted", "journal.db")
	err := run(context.Background(), []string{"--node=n", "--cri-endpoint=", "--state-file=" + missing}, env(nil), &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--state-file")
	assert.Contains(t, err.Error(), filepath.Dir(missing))
	_, statErr := os.Stat(filepath.Dir(missing))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the directory is not created")
}
