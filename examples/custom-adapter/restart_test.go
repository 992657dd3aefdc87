package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// sandboxedPod is a live pod ns/web, uid-web, whose sandbox can be replaced
// while the agent is down: its PodGetter and SandboxExtractor.
type sandboxedPod struct {
	mu      sync.Mutex
	sandbox string
}

// GetPod returns the live pod ns/web; any other is not found.
func (p *sandboxedPod) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if key != (types.NamespacedName{Namespace: "ns", Name: "web"}) {
		return nil, ports.ErrPodNotFound
	}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.UID = key.Namespace, key.Name, "uid-web"
	return pod, nil
}

// SandboxID returns the pod's sandbox as it is now.
func (p *sandboxedPod) SandboxID(ctx context.Context, pod *corev1.Pod) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sandbox, nil
}

// replace gives the pod another sandbox, as a runtime that restarted it.
func (p *sandboxedPod) replace(sandbox string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sandbox = sandbox
}

// runAgent starts an engine on the state files, as the example's agent
// runs it (StateFiles its PolicyHandler, Inventory and Observer), for a
// while of fake time, then stops it, and returns the events it reported.
func runAgent(t *testing.T, s *StateFiles, pod *sandboxedPod, track ...ports.PU) []deletion.Event {
	t.Helper()
	var mu sync.Mutex
	var events []deletion.Event
	engine, err := deletion.New(pod, s, deletion.Options{
		SandboxExtractor: pod,
		Inventory:        s,
		SweepInterval:    time.Second,
		Observer: deletion.Observers(s, deletion.ObserverFunc(func(ev deletion.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		})),
	})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- engine.Start(ctx) }()
	for _, pu := range track {
		require.NoError(t, engine.Track(pu))
	}
	time.Sleep(10 * time.Second) // ten sweeps
	synctest.Wait()
	stop()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	return events
}

// eventsOf returns the events of kind k.
func eventsOf(events []deletion.Event, k deletion.EventKind) []deletion.Event {
	var out []deletion.Event
	for _, ev := range events {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// TestStateFilesKeepTheRecordedSandboxAcrossARestart: a PU tracked without
// a sandbox gets its pod's sandbox s1 recorded by the engine (EventAdopted),
// which the state files keep; the pod's sandbox is replaced by s2 while the
// agent is down, and the engine started after the restart destroys the PU
// as SandboxChanged. Were EventAdopted not written, the listed PU would
// have no sandbox, and the new engine would record s2 as its first.
func TestStateFilesKeepTheRecordedSandboxAcrossARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &StateFiles{Dir: t.TempDir()}
		pod := &sandboxedPod{sandbox: "s1"}
		pu := ports.PU{PUID: "uid-web", Pod: types.NamespacedName{Namespace: "ns", Name: "web"}}
		require.NoError(t, s.Create(pu, []byte("rules"))) // the agent creates the PU before it knows the sandbox

		first := runAgent(t, s, pod, pu)

		adopted := eventsOf(first, deletion.EventAdopted)
		require.Len(t, adopted, 1, "the first check records the sandbox")
		assert.Equal(t, "s1", adopted[0].PU.SandboxID)
		assert.Empty(t, eventsOf(first, deletion.EventDestroyed), "the pod runs in s1: its PU stays")
		listed, err := s.ListPUs(t.Context())
		require.NoError(t, err)
		assert.Equal(t, []ports.PU{{PUID: "uid-web", Pod: pu.Pod, SandboxID: "s1"}}, listed, "the state file keeps the recorded sandbox")

		pod.replace("s2") // while the agent is down

		second := runAgent(t, s, pod)

		destroyed := eventsOf(second, deletion.EventDestroyed)
		require.Len(t, destroyed, 1, "the PU of the replaced sandbox is destroyed after the restart")
		assert.Equal(t, ports.ReasonSandboxChanged, destroyed[0].Reason)
		assert.Equal(t, "s1", destroyed[0].PU.SandboxID)
		assert.Empty(t, eventsOf(second, deletion.EventAdopted), "s2 is not taken as the PU's first sandbox")
		assert.NoFileExists(t, filepath.Join(s.Dir, "uid-web.state"))
	})
}

// TestStateFilesObserveNeverBringsBackAFile: an EventAdopted of a PU whose
// file is gone writes nothing, and one of a PU whose file holds another
// sandbox or pod leaves it as it is.
func TestStateFilesObserveNeverBringsBackAFile(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	pod := types.NamespacedName{Namespace: "ns", Name: "web"}

	s.Observe(deletion.Event{Kind: deletion.EventAdopted, PU: ports.PU{PUID: "uid-gone", Pod: pod, SandboxID: "s1"}})
	assert.NoFileExists(t, filepath.Join(s.Dir, "uid-gone.state"))

	require.NoError(t, s.Create(ports.PU{PUID: "uid-a", Pod: pod, SandboxID: "s0"}, nil))
	require.NoError(t, s.Create(ports.PU{PUID: "uid-b", Pod: pod}, nil))
	s.Observe(deletion.Event{Kind: deletion.EventAdopted, PU: ports.PU{PUID: "uid-a", Pod: pod, SandboxID: "s1"}})
	s.Observe(deletion.Event{Kind: deletion.EventAdopted, PU: ports.PU{PUID: "uid-b", Pod: types.NamespacedName{Namespace: "ns", Name: "other"}, SandboxID: "s1"}})
	s.Observe(deletion.Event{Kind: deletion.EventTracked, PU: ports.PU{PUID: "uid-b", Pod: pod, SandboxID: "s1"}})

	listed, err := s.ListPUs(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []ports.PU{{PUID: "uid-a", Pod: pod, SandboxID: "s0"}, {PUID: "uid-b", Pod: pod}}, listed)
}
