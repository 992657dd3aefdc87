package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/program"
)

// inAPod is the environment of a pod whose Deployment sets $POD_NAMESPACE
// (deploy/deployment.yaml): the namespace of the Lease.
var inAPod = env(map[string]string{"POD_NAMESPACE": "podsweeper"})

// TestNoClientRateLimitByDefault: the controller's client has no
// client-side limit by default (the API server's priority and fairness
// decide), however its config is given (program.Flags.RESTConfig): a limit
// of 5 a second would make a deletion of 1,000 pods take 200 s.
func TestNoClientRateLimitByDefault(t *testing.T) {
	defaults, err := parseFlags([]string{"--pu-dir", "/x"}, inAPod, io.Discard)
	require.NoError(t, err)
	assert.Negative(t, defaults.KubeAPIQPS, "no client-side limit by default")
}

// TestTheRailsAreOffByDefault: destroys are on and unlimited unless
// --dry-run or --max-destroys-per-second say otherwise; the metrics, the
// status page and the dry run's report are served over HTTPS behind
// authentication by default.
func TestTheRailsAreOffByDefault(t *testing.T) {
	cfg, err := parseFlags([]string{"--pu-dir", "/x"}, inAPod, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.DryRun)
	assert.Zero(t, cfg.MaxDestroysPerSecond)
	assert.Equal(t, ":8443", cfg.MetricsBindAddress)
	assert.True(t, cfg.MetricsSecure)
	cfg, err = parseFlags([]string{"--pu-dir", "/x", "--dry-run", "--max-destroys-per-second=100", "--destroy-burst=10"},
		inAPod, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.DryRun)
	assert.Equal(t, 100.0, cfg.MaxDestroysPerSecond)
	assert.Equal(t, 10, cfg.DestroyBurst)
}

// TestSlimPodCacheByDefault: the pod cache is slim unless
// --slim-pod-cache=false asks for whole pods.
func TestSlimPodCacheByDefault(t *testing.T) {
	cfg, err := parseFlags([]string{"--pu-dir", "/x"}, inAPod, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.podCache.Slim)
	cfg, err = parseFlags([]string{"--pu-dir", "/x", "--slim-pod-cache=false"}, inAPod, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.podCache.Slim)
}

// TestLeaseDurationsThatLetTwoLeadersDestroyAreRefused: the command line
// refuses lease times under which the leader might still destroy when the
// other replica can take its Lease (k8s.CheckLeaseDurations), with a usage
// error that names the flags; the defaults and the Deployment's pass.
func TestLeaseDurationsThatLetTwoLeadersDestroyAreRefused(t *testing.T) {
	_, err := parseFlags([]string{"--pu-dir", "/x"}, inAPod, io.Discard)
	require.NoError(t, err, "the defaults, 15s/10s/2s")
	for name, args := range map[string][]string{
		"no margin":                {"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=12500ms"},
		"renew deadline too long":  {"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=15s"},
		"retry period too long":    {"--leader-election-renew-deadline=2s", "--leader-election-retry-period=2s"},
		"no retry period":          {"--leader-election-retry-period=0"},
		"client-go's jitter":       {"--leader-election-lease-duration=20s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=9s"},
		"part seconds":             {"--leader-election-lease-duration=15500ms"},
		"milliseconds":             {"--leader-election-lease-duration=2500ms", "--leader-election-renew-deadline=1s", "--leader-election-retry-period=200ms"},
		"no time to renew":         {"--leader-election-lease-duration=2s", "--leader-election-renew-deadline=2ns", "--leader-election-retry-period=1ns"},
		"renew deadline under 1s":  {"--leader-election-lease-duration=2s", "--leader-election-renew-deadline=999ms", "--leader-election-retry-period=100ms"},
		"retry period under 100ms": {"--leader-election-lease-duration=3s", "--leader-election-renew-deadline=1s", "--leader-election-retry-period=99ms"},
	} {
		_, err := parseFlags(append([]string{"--pu-dir", "/x"}, args...), inAPod, io.Discard)
		require.ErrorIs(t, err, program.ErrUsage, name)
		assert.ErrorIs(t, err, k8s.ErrInvalidSetup, name)
		assert.Contains(t, err.Error(), "--leader-election-lease-duration", name)
	}
	_, err = parseFlags([]string{"--pu-dir", "/x", "--leader-elect=false", "--leader-election-renew-deadline=15s"},
		inAPod, io.Discard)
	assert.NoError(t, err, "without leader election the lease times are not used")
}

// TestAClientTooSlowToRenewTheLeaseIsRefused: with leader election and a
// positive --kube-api-qps, the client must allow a renewal every
// --leader-election-retry-period, or the leader loses its Lease after its
// burst; the refusal comes before any connection, as a usage error.
func TestAClientTooSlowToRenewTheLeaseIsRefused(t *testing.T) {
	_, err := parseFlags([]string{"--pu-dir", "/x", "--kube-api-qps=1", "--leader-election-retry-period=500ms",
		"--leader-election-renew-deadline=1s", "--leader-election-lease-duration=3s"}, inAPod, io.Discard)
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--kube-api-qps 1 cannot renew the Lease")
	_, err = parseFlags([]string{"--pu-dir", "/x", "--kube-api-qps=1"}, inAPod, io.Discard)
	assert.NoError(t, err, "1 a second renews every 2s")
	_, err = parseFlags([]string{"--pu-dir", "/x", "--kube-api-qps=1", "--leader-elect=false", "--leader-election-retry-period=500ms"}, inAPod, io.Discard)
	assert.NoError(t, err, "without leader election there is no Lease to renew")
}

// TestALeaseNoAPIServerTakesIsRefused: a --leader-election-id that is no
// Lease's name, or a --leader-election-namespace that is no namespace's,
// is a usage error, before the controller connects to anything.
func TestALeaseNoAPIServerTakesIsRefused(t *testing.T) {
	for name, args := range map[string][]string{
		"a Lease name":     {"--leader-election-id=Not_A_Lease_Name"},
		"a namespace name": {"--leader-election-namespace=Not_A_Namespace"},
		"a namespace path": {"--leader-election-namespace=a/b"},
	} {
		_, err := parseFlags(append([]string{"--pu-dir", "/x"}, args...), inAPod, io.Discard)
		assert.ErrorIs(t, err, program.ErrUsage, name)
	}
}

// TestALeaseNamespaceIsRequiredOutsideACluster: with leader election and
// no --leader-election-namespace ($POD_NAMESPACE unset), a controller
// outside a pod has no namespace for its Lease: that is a usage error
// (status 2) that names the flag and says how to set it, before the
// controller connects to anything.
func TestALeaseNamespaceIsRequiredOutsideACluster(t *testing.T) {
	if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		t.Skip("in a pod: the Lease takes the pod's namespace")
	}
	noEnv := func(string) string { return "" }
	// A cluster's config that reaches nothing: the refusal comes first.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--pu-dir", t.TempDir(), "--kubeconfig", kubeconfig}, noEnv, &stderr)
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--leader-election-namespace")
	assert.Contains(t, err.Error(), "POD_NAMESPACE")
	_, err = parseFlags([]string{"--pu-dir", "/x"}, env(map[string]string{"POD_NAMESPACE": "podsweeper"}), io.Discard)
	assert.NoError(t, err, "$POD_NAMESPACE")
	_, err = parseFlags([]string{"--pu-dir", "/x", "--leader-election-namespace=podsweeper"}, noEnv, io.Discard)
	assert.NoError(t, err, "--leader-election-namespace")
	_, err = parseFlags([]string{"--pu-dir", "/x", "--leader-elect=false"}, noEnv, io.Discard)
	assert.NoError(t, err, "no Lease without leader election")
}

// TestAMissingPUDirIsAUsageError: a --pu-dir that is missing, or is a
// file, is the command line's fault: refused with status 2 (ErrUsage),
// naming the flag, before anything connects.
func TestAMissingPUDirIsAUsageError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, dir := range []string{filepath.Join(t.TempDir(), "not-mounted"), file} {
		err := run(context.Background(), []string{"--pu-dir", dir, "--leader-elect=false", "--kubeconfig", "/nonexistent"},
			func(string) string { return "" }, io.Discard)
		require.ErrorIs(t, err, program.ErrUsage, dir)
		assert.Contains(t, err.Error(), "--pu-dir")
	}
}
