package bolt_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// crashAgentEnv, when set, makes TestCrashHelper act as the agent, on the
// files of the directory it names.
const crashAgentEnv = "PODSWEEPER_BOLT_CRASH_AGENT"

// clusterPod is a pod of the simulated cluster both processes read.
type clusterPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Sandbox   string `json:"sandbox"`
}

func (p clusterPod) key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

func writeCluster(t *testing.T, path string, pods []clusterPod) {
	t.Helper()
	b, err := json.Marshal(pods)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// clusterPorts returns a PodGetter and a SandboxExtractor answering from
// the cluster file at path as it is now.
func clusterPorts(path string) (ports.PodGetter, ports.SandboxExtractor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var pods []clusterPod
	if err := json.Unmarshal(b, &pods); err != nil {
		return nil, nil, fmt.Errorf("cluster file %s: %w", path, err)
	}
	byKey := map[types.NamespacedName]clusterPod{}
	sandboxes := map[types.UID]string{}
	for _, p := range pods {
		byKey[p.key()] = p
		sandboxes[types.UID(p.UID)] = p.Sandbox
	}
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		p, ok := byKey[key]
		if !ok {
			return nil, fmt.Errorf("pod %s: %w", key, ports.ErrPodNotFound)
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: types.UID(p.UID)}}, nil
	})
	extractor := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
		return sandboxes[pod.UID], nil
	})
	return getter, extractor, nil
}

// TestCrashHelper is the agent TestCrashRestart kills: run as a child
// process with crashAgentEnv set, it runs an engine with the journal as
// Observer and Inventory, tracks a PU for every pod of the cluster from
// several goroutines, prints "ready" once every Track has returned, and
// waits to be killed.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashAgentEnv)
	if dir == "" {
		t.Skip("run by TestCrashRestart as the agent it kills")
	}
	j, err := bolt.Open(filepath.Join(dir, "journal.db"), bolt.Options{Timeout: 10 * time.Second})
	require.NoError(t, err)
	getter, extractor, err := clusterPorts(filepath.Join(dir, "cluster.json"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	require.NoError(t, err)
	var pods []clusterPod
	require.NoError(t, json.Unmarshal(b, &pods))

	engine, err := deletion.New(getter, ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		return fmt.Errorf("the first agent destroys nothing, got %v", ev)
	}), deletion.Options{
		SandboxExtractor: extractor,
		Inventory:        j,
		Observer:         deletion.Observers(j),
		SweepInterval:    time.Hour,
		Logger:           quiet(),
	})
	require.NoError(t, err)
	go func() { _ = engine.Start(context.Background()) }()

	var wg sync.WaitGroup
	const goroutines = 8
	for g := range goroutines {
		wg.Go(func() {
			for i := g; i < len(pods); i += goroutines {
				p := pods[i]
				if err := engine.Track(ports.PU{PUID: p.UID, Pod: p.key(), SandboxID: p.Sandbox}); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println("ready")
	time.Sleep(time.Minute)
	t.Fatal("the agent was not killed")
}

// holdJournalEnv, when set, makes TestHoldJournalHelper open the journal
// at that path, print "ready" and wait to be killed.
const holdJournalEnv = "PODSWEEPER_BOLT_HOLD_JOURNAL"

// TestHoldJournalHelper is the other process of TestOpenLockedByAnotherProcess.
func TestHoldJournalHelper(t *testing.T) {
	path := os.Getenv(holdJournalEnv)
	if path == "" {
		t.Skip("run by TestOpenLockedByAnotherProcess as the process holding the journal")
	}
	j, err := bolt.Open(path, bolt.Options{})
	require.NoError(t, err)
	defer j.Close()
	fmt.Println("ready")
	time.Sleep(time.Minute)
	t.Fatal("not killed")
}

// A journal another process holds: Open fails with ErrLocked after
// Timeout; once that process is killed, the kernel lets go of its lock and
// Open succeeds.
func TestOpenLockedByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldJournalHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdJournalEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	waitReady(t, stdout, &stderr)

	const timeout = 300 * time.Millisecond
	start := time.Now()
	_, err = bolt.Open(path, bolt.Options{Timeout: timeout, Logger: quiet()})
	require.ErrorIs(t, err, bolt.ErrLocked)
	assert.Less(t, time.Since(start), timeout+2*time.Second)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	j, err := bolt.Open(path, bolt.Options{Timeout: timeout, Logger: quiet()})
	require.NoError(t, err, "the lock of a killed process is gone with it")
	require.NoError(t, j.Close())
}

// waitReady waits for the child to print "ready", then drains its output.
func waitReady(t *testing.T, stdout io.Reader, stderr fmt.Stringer) {
	t.Helper()
	ready := make(chan struct{})
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if s.Text() == "ready" {
				close(ready)
				break
			}
		}
		for s.Scan() { // drain until the process dies
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("the child never became ready; its stderr:\n%s", stderr)
	}
}

// An agent killed with SIGKILL right after its Tracks returned loses none
// of them, and the next agent on the same journal destroys exactly the PUs
// whose pods went away (or whose sandbox changed) while it was down.
func TestCrashRestart(t *testing.T) {
	dir := t.TempDir()
	clusterFile := filepath.Join(dir, "cluster.json")
	var pods []clusterPod
	for i := range 60 {
		pods = append(pods, clusterPod{Namespace: "ns", Name: fmt.Sprintf("web-%02d", i), UID: fmt.Sprintf("uid-%02d", i), Sandbox: fmt.Sprintf("sb-%02d-a", i)})
	}
	writeCluster(t, clusterFile, pods)

	// The first agent: tracks every pod, then dies at once.
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashAgentEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	waitReady(t, stdout, &stderr)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killed = true
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stderr:\n%s", stderr.String())
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the agent died of SIGKILL, not %v; stderr:\n%s", err, stderr.String())

	// While it is down: ten pods are deleted, one pod's sandbox is
	// replaced, one pod is recreated under the same name.
	gone := map[string]bool{}
	for _, p := range pods[:10] {
		gone[p.UID] = true
	}
	changed, recreated := pods[10], pods[11]
	after := slices.Clone(pods[10:])
	after[0].Sandbox = "sb-10-b"
	after[1].UID = "uid-11-new"
	writeCluster(t, clusterFile, after)

	// The next agent, on the same journal.
	path := filepath.Join(dir, "journal.db")
	j, err := bolt.Open(path, bolt.Options{Logger: quiet()})
	require.NoError(t, err)
	listed, err := j.ListPUs(context.Background())
	require.NoError(t, err)
	want := make([]ports.PU, 0, len(pods))
	for _, p := range pods {
		want = append(want, ports.PU{PUID: p.UID, Pod: p.key(), SandboxID: p.Sandbox})
	}
	require.Equal(t, want, listed, "every PU whose Track returned is in the journal, with its sandbox")

	getter, extractor, err := clusterPorts(clusterFile)
	require.NoError(t, err)
	var mu sync.Mutex
	destroyed := map[string]ports.DestroyEvent{}
	var twice []string
	checks := map[string]int{}
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := destroyed[ev.PUID]; ok {
			twice = append(twice, ev.PUID)
		}
		destroyed[ev.PUID] = ev
		return nil
	})
	restored := make(chan int, 1)
	engine, err := deletion.New(getter, policy, deletion.Options{
		SandboxExtractor: extractor,
		Inventory:        j,
		Observer: deletion.Observers(j, deletion.ObserverFunc(func(ev deletion.Event) {
			switch ev.Kind {
			case deletion.EventChecked:
				mu.Lock()
				checks[ev.PU.PUID]++
				mu.Unlock()
			case deletion.EventRestored:
				restored <- ev.Count
			}
		})),
		SweepInterval: 200 * time.Millisecond,
		Logger:        quiet(),
	})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Start(ctx) }()
	defer func() {
		stop()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("the engine did not stop")
		}
		require.NoError(t, j.Close())
	}()
	select {
	case n := <-restored:
		assert.Equal(t, len(pods), n, "every PU of the journal is restored")
	case <-time.After(10 * time.Second):
		t.Fatal("no EventRestored")
	}

	wantDestroyed := map[string]ports.DestroyEvent{}
	for _, p := range pods[:10] {
		wantDestroyed[p.UID] = ports.DestroyEvent{PUID: p.UID, Pod: p.key(), SandboxID: p.Sandbox, Reason: ports.ReasonPodGone}
	}
	wantDestroyed[changed.UID] = ports.DestroyEvent{PUID: changed.UID, Pod: changed.key(), SandboxID: "sb-10-a", Reason: ports.ReasonSandboxChanged}
	wantDestroyed[recreated.UID] = ports.DestroyEvent{PUID: recreated.UID, Pod: recreated.key(), SandboxID: recreated.Sandbox, Reason: ports.ReasonUIDChanged}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(destroyed) >= len(wantDestroyed)
	}, 20*time.Second, 10*time.Millisecond, "the PUs of gone pods and of the old sandbox are destroyed")

	live := pods[12:]
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range live {
			if checks[p.UID] < 2 {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "every live PU is checked twice by the periodic checks")
	mu.Lock()
	assert.Equal(t, wantDestroyed, destroyed, "exactly these, and none of the live pods'")
	assert.Empty(t, twice, "none destroyed twice")
	mu.Unlock()

	liveWant := want[12:]
	assert.Equal(t, liveWant, deletiontest.PUs(engine))
	pus, err := j.ListPUs(context.Background())
	require.NoError(t, err)
	assert.Equal(t, liveWant, pus, "the journal forgot the destroyed PUs and holds the live ones")
	assert.Zero(t, j.Failures())
}

// quiet drops every log line. (logr.Discard() has no sink, which the
// journal and the engine take for "use klog".)
func quiet() logr.Logger { return funcr.New(func(_, _ string) {}, funcr.Options{}) }
