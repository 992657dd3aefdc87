package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
users:
- name: u
  user:
    token: t
`

// TestClientRateLimitIsTheSameHoweverTheConfigIsGiven: --kubeconfig and
// $KUBECONFIG give the client the same rate limit, the flags' (the
// kubelet's 50 a second, burst 100, by default): clientcmd alone would
// leave QPS at 0, which client-go reads as 5 requests a second, and every
// destroy costs a confirming read.
func TestClientRateLimitIsTheSameHoweverTheConfigIsGiven(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(testKubeconfig), 0o600))
	for name, args := range map[string][]string{
		"defaults":   {"--node", "n", "--state-file", "/x"},
		"with flags": {"--node", "n", "--state-file", "/x", "--kube-api-qps", "-1"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := parseFlags(args, func(string) string { return "" }, io.Discard)
			require.NoError(t, err)

			byFlag, err := restConfig(path, cfg.kubeAPIQPS, cfg.kubeAPIBurst)
			require.NoError(t, err)
			t.Setenv("KUBECONFIG", path)
			byEnv, err := restConfig("", cfg.kubeAPIQPS, cfg.kubeAPIBurst)
			require.NoError(t, err)

			assert.Equal(t, float32(cfg.kubeAPIQPS), byFlag.QPS)
			assert.Equal(t, cfg.kubeAPIBurst, byFlag.Burst)
			assert.Equal(t, byFlag.QPS, byEnv.QPS, "the same limit through $KUBECONFIG")
			assert.Equal(t, byFlag.Burst, byEnv.Burst)
			assert.NotZero(t, byFlag.QPS, "QPS 0 is client-go's default of 5 a second")
		})
	}
	defaults, err := parseFlags([]string{"--node", "n", "--state-file", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 50.0, defaults.kubeAPIQPS, "the kubelet's default")
	assert.Equal(t, 100, defaults.kubeAPIBurst, "the kubelet's default")
}

// TestClientRateLimitFlagsRefuseNonsense: a QPS of 0 (client-go's 5 a
// second in disguise) and a positive QPS without a burst are usage errors.
func TestClientRateLimitFlagsRefuseNonsense(t *testing.T) {
	for name, args := range map[string][]string{
		"qps 0":             {"--node", "n", "--state-file", "/x", "--kube-api-qps", "0"},
		"no burst with qps": {"--node", "n", "--state-file", "/x", "--kube-api-qps", "20", "--kube-api-burst", "0"},
	} {
		_, err := parseFlags(args, func(string) string { return "" }, io.Discard)
		assert.ErrorIs(t, err, errUsage, name)
	}
}
