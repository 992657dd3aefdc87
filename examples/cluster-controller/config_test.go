package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// TestClientRateLimitIsTheSameHoweverTheConfigIsGiven: --kubeconfig and
// $KUBECONFIG give the client the same rate limit, the flags' (no client-side limit by default):
// clientcmd alone would leave QPS at 0, which client-go reads as 5 requests
// a second, and every destroy costs a confirming read.
func TestClientRateLimitIsTheSameHoweverTheConfigIsGiven(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults":   {"--pu-dir", "/x"},
		"with flags": {"--pu-dir", "/x", "--kube-api-qps", "30", "--kube-api-burst", "60"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := parseFlags(args, func(string) string { return "" }, io.Discard)
			require.NoError(t, err)
			testkube.SameRateLimitHoweverGiven(t, restConfig, cfg.kubeAPIQPS, cfg.kubeAPIBurst)
		})
	}
	defaults, err := parseFlags([]string{"--pu-dir", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Negative(t, defaults.kubeAPIQPS, "no client-side limit by default")
}

// TestClientRateLimitFlagsRefuseNonsense: a QPS of 0 (client-go's 5 a
// second in disguise) and a positive QPS without a burst are usage errors.
func TestClientRateLimitFlagsRefuseNonsense(t *testing.T) {
	for name, args := range map[string][]string{
		"qps 0":             {"--pu-dir", "/x", "--kube-api-qps", "0"},
		"no burst with qps": {"--pu-dir", "/x", "--kube-api-qps", "20", "--kube-api-burst", "0"},
	} {
		_, err := parseFlags(args, func(string) string { return "" }, io.Discard)
		assert.ErrorIs(t, err, errUsage, name)
	}
}

// TestSlimPodCacheByDefault: the pod cache is slim unless
// --slim-pod-cache=false asks for whole pods.
func TestSlimPodCacheByDefault(t *testing.T) {
	cfg, err := parseFlags([]string{"--pu-dir", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.slimPodCache)
	cfg, err = parseFlags([]string{"--pu-dir", "/x", "--slim-pod-cache=false"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.slimPodCache)
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
	} {
		_, err := parseFlags(append([]string{"--pu-dir", "/x"}, args...), func(string) string { return "" }, io.Discard)
		require.ErrorIs(t, err, errUsage, name)
		assert.ErrorIs(t, err, k8s.ErrInvalidSetup, name)
		assert.Contains(t, err.Error(), "--leader-election-lease-duration", name)
	}
	_, err = parseFlags([]string{"--pu-dir", "/x", "--leader-elect=false", "--leader-election-renew-deadline=15s"},
		func(string) string { return "" }, io.Discard)
	assert.NoError(t, err, "without leader election the lease times are not used")
}
