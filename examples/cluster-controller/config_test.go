package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/program"
)

// TestNoClientRateLimitByDefault: the controller's client has no
// client-side limit by default (the API server's priority and fairness
// decide), however its config is given (program.Flags.RESTConfig): a limit
// of 5 a second would make a deletion of 1,000 pods take 200 s.
func TestNoClientRateLimitByDefault(t *testing.T) {
	defaults, err := parseFlags([]string{"--pu-dir", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Negative(t, defaults.KubeAPIQPS, "no client-side limit by default")
}

// TestTheRailsAreOffByDefault: destroys are on and unlimited unless
// --dry-run or --max-destroys-per-second say otherwise; the metrics, the
// status page and the dry run's report are served over HTTPS behind
// authentication by default.
func TestTheRailsAreOffByDefault(t *testing.T) {
	cfg, err := parseFlags([]string{"--pu-dir", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.DryRun)
	assert.Zero(t, cfg.MaxDestroysPerSecond)
	assert.Equal(t, ":8443", cfg.MetricsBindAddress)
	assert.True(t, cfg.MetricsSecure)
	cfg, err = parseFlags([]string{"--pu-dir", "/x", "--dry-run", "--max-destroys-per-second=100", "--destroy-burst=10"},
		func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.DryRun)
	assert.Equal(t, 100.0, cfg.MaxDestroysPerSecond)
	assert.Equal(t, 10, cfg.DestroyBurst)
}

// TestSlimPodCacheByDefault: the pod cache is slim unless
// --slim-pod-cache=false asks for whole pods.
func TestSlimPodCacheByDefault(t *testing.T) {
	cfg, err := parseFlags([]string{"--pu-dir", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.podCache.Slim)
	cfg, err = parseFlags([]string{"--pu-dir", "/x", "--slim-pod-cache=false"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.podCache.Slim)
}

// TestLeaseDurationsThatLetTwoLeadersDestroyAreRefused: the command line
// refuses lease times under which the leader might still destroy when the
// other replica can take its Lease (k8s.CheckLeaseDurations), with a usage
// error that names the flags; the defaults and the Deployment's pass.
func TestLeaseDurationsThatLetTwoLeadersDestroyAreRefused(t *testing.T) {
	_, err := parseFlags([]string{"--pu-dir", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err, "the defaults, 15s/10s/2s")
	for name, args := range map[string][]string{
		"no margin":               {"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=12500ms"},
		"renew deadline too long": {"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=15s"},
		"retry period too long":   {"--leader-election-renew-deadline=2s", "--leader-election-retry-period=2s"},
		"no retry period":         {"--leader-election-retry-period=0"},
		"client-go's jitter":      {"--leader-election-lease-duration=20s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=9s"},
		"part seconds":            {"--leader-election-lease-duration=15500ms"},
		"milliseconds":            {"--leader-election-lease-duration=2500ms", "--leader-election-renew-deadline=1s", "--leader-election-retry-period=200ms"},
	} {
		_, err := parseFlags(append([]string{"--pu-dir", "/x"}, args...), func(string) string { return "" }, io.Discard)
		require.ErrorIs(t, err, program.ErrUsage, name)
		assert.ErrorIs(t, err, k8s.ErrInvalidSetup, name)
		assert.Contains(t, err.Error(), "--leader-election-lease-duration", name)
	}
	_, err = parseFlags([]string{"--pu-dir", "/x", "--leader-elect=false", "--leader-election-renew-deadline=15s"},
		func(string) string { return "" }, io.Discard)
	assert.NoError(t, err, "without leader election the lease times are not used")
}

// TestAClientTooSlowToRenewTheLeaseIsRefused: with leader election and a
// positive --kube-api-qps, the client must allow a renewal every
// --leader-election-retry-period, or the leader loses its Lease after its
// burst; the refusal comes before any connection, as a usage error.
func TestAClientTooSlowToRenewTheLeaseIsRefused(t *testing.T) {
	noEnv := func(string) string { return "" }
	_, err := parseFlags([]string{"--pu-dir", "/x", "--kube-api-qps=1", "--leader-election-retry-period=500ms",
		"--leader-election-renew-deadline=1s", "--leader-election-lease-duration=3s"}, noEnv, io.Discard)
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--kube-api-qps 1 cannot renew the Lease")
	_, err = parseFlags([]string{"--pu-dir", "/x", "--kube-api-qps=1"}, noEnv, io.Discard)
	assert.NoError(t, err, "1 a second renews every 2s")
	_, err = parseFlags([]string{"--pu-dir", "/x", "--kube-api-qps=1", "--leader-elect=false", "--leader-election-retry-period=500ms"}, noEnv, io.Discard)
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
		_, err := parseFlags(append([]string{"--pu-dir", "/x"}, args...), func(string) string { return "" }, io.Discard)
		assert.ErrorIs(t, err, program.ErrUsage, name)
	}
}
