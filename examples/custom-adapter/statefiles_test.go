package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// stateOf is the PU of puid for a pod ns/web.
func stateOf(puid string) ports.PU {
	return ports.PU{PUID: puid, Pod: types.NamespacedName{Namespace: "ns", Name: "web"}}
}

func destroyEvent(puid string) ports.DestroyEvent {
	return ports.DestroyEvent{PUID: puid, Pod: types.NamespacedName{Namespace: "ns", Name: "web"}, Reason: ports.ReasonPodGone}
}

func TestStateFilesRemovesTheFile(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	require.NoError(t, s.Create(stateOf("uid-1"), []byte("x")))
	require.NoError(t, s.Create(stateOf("uid-2"), []byte("y")))

	require.NoError(t, s.DestroyPU(context.Background(), destroyEvent("uid-1")))

	assert.NoFileExists(t, filepath.Join(s.Dir, "uid-1.state"))
	assert.FileExists(t, filepath.Join(s.Dir, "uid-2.state"), "only the PU's own file goes")
}

func TestStateFilesAcceptsPodUIDs(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	for _, puid := range []string{"0b1c2d3e-aaaa-4bbb-8ccc-1234567890ab", "uid_1.v2", strings.Repeat("a", 128)} {
		require.NoError(t, s.Create(stateOf(puid), nil), "PUID %q", puid)
		require.NoError(t, s.DestroyPU(context.Background(), destroyEvent(puid)), "PUID %q", puid)
		assert.NoFileExists(t, filepath.Join(s.Dir, puid+".state"))
	}
}

func TestStateFilesMissingFileIsDestroyed(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	require.NoError(t, s.DestroyPU(context.Background(), destroyEvent("uid-never-created")))
}

func TestStateFilesBadPUIDIsPermanent(t *testing.T) {
	root := t.TempDir()
	s := &StateFiles{Dir: filepath.Join(root, "state")}
	require.NoError(t, os.Mkdir(s.Dir, 0o700))
	victim := filepath.Join(root, "victim.state")
	require.NoError(t, os.WriteFile(victim, []byte("keep me"), 0o600))

	for _, puid := range []string{"", ".", "..", "../victim", "a/b", `a\b`, "/etc/passwd", "uid\x00", ".hidden", "é", strings.Repeat("a", 129)} {
		err := s.DestroyPU(context.Background(), destroyEvent(puid))
		require.ErrorIs(t, err, ErrBadPUID, "PUID %q", puid)
		assert.True(t, ports.IsPermanent(err), "PUID %q", puid)
		require.ErrorIs(t, s.Create(stateOf(puid), nil), ErrBadPUID, "PUID %q", puid)
	}
	assert.FileExists(t, victim)
}

func TestStateFilesIOErrorIsRetryable(t *testing.T) {
	// A state "directory" that is a file: removing under it fails with
	// ENOTDIR, which a later attempt may not hit (an operator fixes the mount).
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	s := &StateFiles{Dir: notDir}

	err := s.DestroyPU(context.Background(), destroyEvent("uid-1"))

	require.Error(t, err)
	assert.False(t, ports.IsPermanent(err))
	assert.NotErrorIs(t, err, ErrBadPUID)
}

func TestStateFilesHonoursCancelledContext(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	require.NoError(t, s.Create(stateOf("uid-1"), nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	require.ErrorIs(t, s.DestroyPU(ctx, destroyEvent("uid-1")), context.Canceled)
	assert.FileExists(t, filepath.Join(s.Dir, "uid-1.state"))
}

// With the engine: a gone pod's file is removed, a bad PUID is dropped
// after one attempt instead of MaxDestroyAttempts.
func TestStateFilesWithTheEngine(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	require.NoError(t, s.Create(ports.PU{PUID: "uid-gone", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}, nil))
	require.NoError(t, s.Create(ports.PU{PUID: "uid-alive", Pod: types.NamespacedName{Namespace: "ns", Name: "alive"}}, nil))
	alive := types.NamespacedName{Namespace: "ns", Name: "alive"}
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		if key == alive {
			p := &corev1.Pod{}
			p.Namespace, p.Name, p.UID = key.Namespace, key.Name, "uid-alive"
			return p, nil
		}
		return nil, ports.ErrPodNotFound
	})
	var attempts []int
	engine, err := deletion.New(getter, s, deletion.Options{
		RetryMinDelay: time.Millisecond,
		Observer: deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventAbandoned {
				attempts = append(attempts, ev.DestroyCalls)
			}
		}),
	})
	require.NoError(t, err)
	require.NoError(t, engine.Track(ports.PU{PUID: "uid-gone", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}))
	require.NoError(t, engine.Track(ports.PU{PUID: "uid-alive", Pod: alive}))
	require.NoError(t, engine.Track(ports.PU{PUID: "../escape", Pod: types.NamespacedName{Namespace: "ns", Name: "evil"}}))

	engine.Sweep(context.Background())

	assert.NoFileExists(t, filepath.Join(s.Dir, "uid-gone.state"))
	assert.FileExists(t, filepath.Join(s.Dir, "uid-alive.state"))
	assert.Equal(t, []int{1}, attempts, "the bad PUID is abandoned at its first attempt")
	require.Len(t, deletiontest.PUs(engine), 1)
	assert.Equal(t, "uid-alive", deletiontest.PUs(engine)[0].PUID)
}

func TestRun(t *testing.T) {
	require.NoError(t, run(context.Background()))
}

func TestStateFilesListPUs(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	want := []ports.PU{
		{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "web-0"}, SandboxID: "sb-a"},
		{PUID: "uid-b", Pod: types.NamespacedName{Namespace: "other", Name: "db-0"}},
		{PUID: "uid-c", Pod: types.NamespacedName{Namespace: "ns", Name: "web-1"}},
	}
	for _, i := range []int{2, 0, 1} {
		require.NoError(t, s.Create(want[i], []byte("rules")))
	}

	got, err := s.ListPUs(context.Background())
	require.NoError(t, err)
	assert.Equal(t, want, got, "every PU with its pod, sorted by PUID")
	tmp, err := filepath.Glob(filepath.Join(s.Dir, ".*"))
	require.NoError(t, err)
	assert.Empty(t, tmp, "no temporary file is left behind")

	require.NoError(t, s.DestroyPU(context.Background(), destroyEvent("uid-b")))
	got, err = s.ListPUs(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []ports.PU{want[0], want[2]}, got)
}

func TestStateFilesCreateNeedsThePod(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	require.Error(t, s.Create(ports.PU{PUID: "uid-a", Pod: types.NamespacedName{Name: "web"}}, nil))
	require.Error(t, s.Create(ports.PU{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns"}}, nil))
	assert.NoFileExists(t, filepath.Join(s.Dir, "uid-a.state"))
}

func TestStateFilesListPUsNamesABadFile(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	require.NoError(t, s.Create(stateOf("uid-a"), nil))
	bad := filepath.Join(s.Dir, "uid-b.state")
	require.NoError(t, os.WriteFile(bad, []byte("firewall set of web-1\n"), 0o600))

	_, err := s.ListPUs(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad)
}

// The example restarted: a new engine with the state files as its
// Inventory tracks every PU again and destroys the one whose pod was
// deleted while it was down.
func TestStateFilesRestoreAfterRestart(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	live := map[types.NamespacedName]types.UID{}
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		key := types.NamespacedName{Namespace: "ns", Name: name}
		live[key] = types.UID("uid-" + name)
		require.NoError(t, s.Create(ports.PU{PUID: "uid-" + name, Pod: key, SandboxID: "sb-" + name}, []byte("rules")))
	}
	delete(live, types.NamespacedName{Namespace: "ns", Name: "web-1"}) // while the agent is down
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		uid, ok := live[key]
		if !ok {
			return nil, ports.ErrPodNotFound
		}
		p := &corev1.Pod{}
		p.Namespace, p.Name, p.UID = key.Namespace, key.Name, uid
		return p, nil
	})
	restored := make(chan int, 1)
	var destroyed []string
	engine, err := deletion.New(getter, ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		destroyed = append(destroyed, ev.PUID)
		return s.DestroyPU(ctx, ev)
	}), deletion.Options{
		Inventory:     s,
		SweepInterval: time.Hour,
		Observer: deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventRestored {
				restored <- ev.Count
			}
		}),
	})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Start(ctx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
	}()

	select {
	case n := <-restored:
		assert.Equal(t, 3, n)
	case <-time.After(10 * time.Second):
		t.Fatal("nothing restored")
	}
	engine.Sweep(ctx)

	assert.Equal(t, []string{"uid-web-1"}, destroyed)
	assert.NoFileExists(t, filepath.Join(s.Dir, "uid-web-1.state"))
	pus, err := s.ListPUs(context.Background())
	require.NoError(t, err)
	require.Len(t, pus, 2)
	assert.Equal(t, "sb-web-0", pus[0].SandboxID, "the sandbox is restored too")
	assert.Equal(t, []ports.PU{pus[0], pus[1]}, deletiontest.PUs(engine))
}
