package promises_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

type recordingTracker struct {
	mu    sync.Mutex
	calls []string
}

func (f *recordingTracker) Track(pu ports.PU) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("track %s %s", pu.PUID, pu.SandboxID))
	return nil
}
func (f *recordingTracker) Untrack(puid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "untrack "+puid)
	return true
}
func (f *recordingTracker) TriggerPod(n types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "trigger "+n.String())
}
func (f *recordingTracker) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// Hold: "A list the Runtime could not order (it failed) neither moves nor
// tracks a PU listed with another sandbox than before"; once it answers,
// the PU listed with another sandbox than the Inventory's is untracked
// and tracked again; a second Resync is ErrResyncRunning.
func TestAuditHoldsResyncRuntimeFailureNeitherMovesNorTracks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		// Cache times say A is older; the runtime says B (stopped) is dead,
		// so B is listed first when the runtime answers.
		e.write("net1", "sbA", "uid1", e.netns("a", true), now.Add(-2*time.Hour))
		e.write("net1", "sbB", "uid1", e.netns("b", true), now.Add(-time.Hour))
		rt := &fakeRuntime{}
		rt.set(sb("sbB", "uid1", false, now.Add(-3*time.Hour)))
		c := e.collector(rt, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pus, err := c.ListPUs(ctx)
		if err != nil || len(pus) != 1 || pus[0].SandboxID != "sbB" {
			t.Fatalf("inventory %v %v", pus, err)
		}
		tr := &recordingTracker{}
		done := make(chan error, 1)
		go func() { done <- c.Resync(ctx, tr) }()
		synctest.Wait()
		if err := c.Resync(ctx, tr); !errors.Is(err, cni.ErrResyncRunning) {
			t.Fatalf("second Resync = %v", err)
		}
		rt.mu.Lock()
		rt.err = errors.New("down")
		rt.mu.Unlock()
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if calls := tr.take(); len(calls) != 0 {
			t.Fatalf("runtime failed: calls %v, want none", calls)
		}
		rt.mu.Lock()
		rt.err = nil
		rt.mu.Unlock()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		calls := tr.take()
		for _, c := range calls {
			if c == "untrack uid1" || c == "track uid1 sbA" {
				t.Fatalf("runtime back: calls %v", calls)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
