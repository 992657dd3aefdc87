package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseFlagsDefaults(t *testing.T) {
	cfg, err := parseFlags(nil, env(map[string]string{"NODE_NAME": "node-a"}), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "node-a", cfg.node, "--node defaults to $NODE_NAME")
	assert.Equal(t, ":8080", cfg.metricsAddr)
	assert.Equal(t, ":8081", cfg.probeAddr)
	assert.Equal(t, deletion.DefaultSweepInterval, cfg.sweepInterval)
	assert.Equal(t, deletion.DefaultWorkers, cfg.workers)
	assert.Equal(t, "/var/lib/podsweeper/journal.db", cfg.stateFile)
	assert.Empty(t, cfg.kubeconfig)
}

func TestParseFlagsOverrides(t *testing.T) {
	cfg, err := parseFlags([]string{
		"--kubeconfig=/k", "--node=node-b", "--metrics-bind-address=0", "--health-probe-bind-address=:9000",
		"--sweep-interval=30s", "--workers=16", "--zap-devel", "--state-file=/s/j.db",
	}, env(map[string]string{"NODE_NAME": "node-a"}), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, config{
		kubeconfig: "/k", node: "node-b", metricsAddr: "0", probeAddr: ":9000",
		sweepInterval: 30 * time.Second, workers: 16, stateFile: "/s/j.db", zap: cfg.zap,
	}, cfg)
	assert.True(t, cfg.zap.Development)
}

func TestParseFlagsErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no node":        nil,
		"empty node":     {"--node="},
		"zero interval":  {"--node=n", "--sweep-interval=0s"},
		"negative":       {"--node=n", "--workers=-1"},
		"zero workers":   {"--node=n", "--workers=0"},
		"unknown flag":   {"--node=n", "--nope"},
		"bad duration":   {"--node=n", "--sweep-interval=soon"},
		"extra argument": {"--node=n", "extra"},
		"no state file":  {"--node=n", "--state-file="},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseFlags(args, env(nil), &bytes.Buffer{})
			require.ErrorIs(t, err, errUsage)
		})
	}
}

func TestParseFlagsHelp(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseFlags([]string{"-h"}, env(nil), &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, stderr.String(), "-sweep-interval")
}

func TestRunRejectsBadCommandLine(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--workers=0", "--node=n"}, &stderr)
	require.ErrorIs(t, err, errUsage)
}

func TestRunFailsOnMissingKubeconfig(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--node=n", "--kubeconfig=" + t.TempDir() + "/missing", "--state-file=" + t.TempDir() + "/j.db"}, &stderr)
	require.Error(t, err)
	assert.NotErrorIs(t, err, errUsage)
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

	err := run(context.Background(), []string{"--node=n", "--kubeconfig=" + kubeconfig, "--state-file=" + state}, &bytes.Buffer{})

	require.ErrorIs(t, err, bolt.ErrNotJournal)
	assert.Contains(t, err.Error(), "--state-file")
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	assert.Equal(t, "not a journal", string(b))
}
