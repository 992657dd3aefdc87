package main

import (
	"github.com/podsweeper/podsweeper/examples/node-agent/agent"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientRateLimitIsTheKubeletsByDefault: a node agent's client is
// limited as the kubelet's is, 50 requests a second with a burst of 100,
// however its config is given (program.Flags.RESTConfig).
func TestClientRateLimitIsTheKubeletsByDefault(t *testing.T) {
	defaults, err := agent.ParseFlags([]string{"--node", "n", "--state-file", "/x"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 50.0, defaults.KubeAPIQPS, "the kubelet's default")
	assert.Equal(t, 100, defaults.KubeAPIBurst, "the kubelet's default")
}
