package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// collectorArgsEnv, when set, makes TestCollectorHelper run the collector
// with these arguments, one a line.
const collectorArgsEnv = "PODSWEEPER_CNI_GC_ARGS"

// TestCollectorHelper is the collector the binary tests run in a process of
// its own (run registers its metrics on controller-runtime's global
// registry, once a process): with collectorArgsEnv set, it runs the
// collector's command line until SIGTERM, or until killed.
func TestCollectorHelper(t *testing.T) {
	args := os.Getenv(collectorArgsEnv)
	if args == "" {
		t.Skip("run by the tests of the binary as the collector they start, stop and kill")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	require.NoError(t, run(ctx, strings.Split(args, "\n"), os.Getenv, os.Stderr))
}

// TestCollectorKilledAndRestartedDELsNothingItFreedBefore kills the
// collector with SIGKILL while it frees the attachments of twelve pods the
// API server no longer has, DELs in flight, and starts another: the cache
// restores every attachment left, each is freed, the live pod's is kept,
// and no attachment whose entry was gone before the kill is DELed again.
// One whose DEL the kill interrupted may be DELed a second time, which
// the CNI spec requires plugins to accept.
func TestCollectorKilledAndRestartedDELsNothingItFreedBefore(t *testing.T) {
	c, dir, kubeconfigPath := apiServer(t)

	endpoint, live, current := liveSandbox(t, c, dir, "live")

	// A plugin whose DEL takes 200ms, logged when it starts.
	cache, bin, conf, calls := cniDirs(t, dir, "sleep 0.2\n")
	liveFile := writeEntry(t, cache, current, live.Namespace, live.Name, string(live.UID), time.Minute)
	var gone []string
	for i := range 12 {
		id := fmt.Sprintf("gone-%02d", i)
		gone = append(gone, writeEntry(t, cache, id, "default", id, fmt.Sprintf("0b5e7a55-0000-4000-8000-%012d", i), time.Hour))
	}
	exists := func(file string) bool {
		_, err := os.Stat(filepath.Join(cache, "results", file))
		return err == nil
	}
	freed := func() (out []string) {
		for _, f := range gone {
			if !exists(f) {
				out = append(out, f)
			}
		}
		return out
	}
	delsOf := func() map[string]int {
		b, _ := os.ReadFile(calls)
		n := map[string]int{}
		for line := range strings.Lines(string(b)) {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "DEL "); ok {
				n["podnet-"+id+"-eth0"]++
			}
		}
		return n
	}

	args := []string{"--kubeconfig=" + kubeconfigPath, "--node=node-a", "--cri-endpoint=" + endpoint,
		"--cni-cache-dir=" + cache, "--cni-bin-dir=" + bin, "--cni-conf-dir=" + conf,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--status-bind-address=0", "--sweep-interval=200ms", "--resync-interval=300ms"}
	first := startCollector(t, args)
	require.Eventually(t, func() bool { return len(freed()) >= 3 }, 30*time.Second, 10*time.Millisecond, "a first few freed; logs:\n%s", first.logs)
	first.kill(t)
	freedBefore, delsBefore := freed(), delsOf()
	require.Less(t, len(freedBefore), len(gone), "killed before it freed everything")

	second := startCollector(t, args)
	require.Eventually(t, func() bool { return len(freed()) == len(gone) }, 30*time.Second, 10*time.Millisecond,
		"all freed after the restart; logs:\n%s", second.logs)
	second.terminate(t)

	dels := delsOf()
	var twice []string
	for f, n := range dels {
		if n > 1 {
			twice = append(twice, f)
		}
	}
	t.Logf("freed before the kill: %d of %d; DELed twice (cut short by the kill): %v", len(freedBefore), len(gone), twice)
	for _, f := range freedBefore {
		assert.Equal(t, delsBefore[f], dels[f], "%s, freed before the kill, is not DELed after it", f)
	}
	for _, f := range gone {
		assert.Contains(t, []int{1, 2}, dels[f], "%s: DELed once, or twice when the kill interrupted its DEL", f)
	}
	assert.True(t, exists(liveFile), "the live pod's attachment is kept")
	assert.Zero(t, dels[liveFile])
}

// collector is the collector's command line running in a process of its own.
type collector struct {
	cmd  *exec.Cmd
	logs *testkube.SyncBuffer
	done chan error
}

// startCollector runs the collector in a child process, killed when the
// test ends if it still runs.
func startCollector(t *testing.T, args []string) *collector {
	t.Helper()
	c := &collector{logs: &testkube.SyncBuffer{}, done: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestCollectorHelper$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), collectorArgsEnv+"="+strings.Join(args, "\n"))
	c.cmd.Stderr = c.logs
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// kill stops the collector with SIGKILL: the DELs it runs are cut short.
func (c *collector) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	err := <-c.done
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	c.done <- err
}

// terminate stops the collector with SIGTERM and checks that it exits cleanly.
func (c *collector) terminate(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-c.done:
		assert.NoError(t, err, "logs:\n%s", c.logs)
	case <-time.After(30 * time.Second):
		t.Errorf("the collector did not stop on SIGTERM; logs:\n%s", c.logs)
	}
	c.done <- nil
}
