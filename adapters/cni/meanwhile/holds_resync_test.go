package meanwhile_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

type recTracker struct {
	mu      sync.Mutex
	tracks  int
	trigger int
}

func (r *recTracker) Track(ports.PU) error { r.mu.Lock(); r.tracks++; r.mu.Unlock(); return nil }
func (r *recTracker) Untrack(string) bool  { return false }
func (r *recTracker) TriggerPod(types.NamespacedName) {
	r.mu.Lock()
	r.trigger++
	r.mu.Unlock()
}

// collector.go Options.DryRun: a dry run's Resync tracks "a PU it listed the time before, with the same sandbox, no
// more"; Resync triggers a check only of those it did not list the time before (or with another sandbox).
func TestAuditHoldsResyncTracksOnceInDryRunAndTriggersNewOnly(t *testing.T) {
	for _, dry := range []bool{true, false} {
		e := newEnv(t, "")
		testcni.Write(t, filepath.Join(e.cache, "results", "a-s1-eth0"), entry("a", "s1", "eth0", "u1", "okdel"))
		c := e.collector(t, func(o *cni.Options) { o.DryRun = dry; o.ResyncInterval = 30 * time.Millisecond })
		rt := &recTracker{}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_ = c.Resync(ctx, rt)
		cancel()
		if dry && rt.tracks != 1 {
			t.Errorf("dry run: tracked %d times, want 1", rt.tracks)
		}
		if rt.trigger != 1 {
			t.Errorf("dry %v: triggered %d times, want 1", dry, rt.trigger)
		}
	}
}
