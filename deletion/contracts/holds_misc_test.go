package contracts_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// A Sweep called during a check of a PU checks it once more after.
func TestHoldsSweepChecksAPUUnderCheckOnceMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var reads atomic.Int32
		slow := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			reads.Add(1)
			time.Sleep(2 * time.Second)
			return w.getter().GetPod(ctx, k)
		})
		e := deletiontest.NewEngine(t, slow, w.policy(), deletion.Options{NodeName: node, SweepInterval: time.Hour})
		_ = e.Track(w.add("a", "uid-a", ""))
		deletiontest.Start(t, e)
		advance(0)
		e.TriggerPod(key("a"))
		time.Sleep(time.Second)
		before := reads.Load()
		e.Sweep(context.Background())
		if got := reads.Load(); got != before+1 {
			t.Fatalf("reads before Sweep %d, after %d", before, got)
		}
	})
}

// Trigger during a retry's backoff does not check it.
func TestHoldsTriggerDoesNotShortenRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.destroyErr = func(ports.DestroyEvent) error { return errors.New("busy") }
		e := newEngine(t, w, deletion.Options{RetryMinDelay: 10 * time.Second, RetryMaxDelay: 10 * time.Second, SweepInterval: time.Second})
		_ = e.Track(w.add("a", "uid-a", ""))
		deletiontest.Start(t, e)
		advance(0)
		w.del("a")
		e.TriggerPod(key("a"))
		advance(0)
		if n := len(w.destroyed()); n != 1 {
			t.Fatalf("calls %d", n)
		}
		for i := 0; i < 9; i++ {
			e.TriggerPod(key("a"))
			e.TriggerAll()
			advance(time.Second - time.Millisecond)
		}
		if n := len(w.destroyed()); n != 1 {
			t.Fatalf("retried before backoff: calls %d", n)
		}
		advance(1100 * time.Millisecond)
		if n := len(w.destroyed()); n != 2 {
			t.Fatalf("calls after backoff %d", n)
		}
	})
}

// Confirmer never read for a kept PU.
func TestHoldsConfirmerReadOnDestroyPathOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var conf atomic.Int32
		c := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			conf.Add(1)
			return w.getter().GetPod(ctx, k)
		})
		x := ports.SandboxExtractorFunc(func(ctx context.Context, p *corev1.Pod) (string, error) { return "", errors.New("x") })
		e := newEngine(t, w, deletion.Options{Confirmer: c, SandboxExtractor: x, SandboxProber: ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return true, nil })})
		_ = e.Track(w.add("a", "uid-a", "s1"))
		w.setSandbox("a", "")
		e.Sweep(context.Background())
		if conf.Load() != 0 {
			t.Fatalf("confirmer read %d", conf.Load())
		}
	})
}

// SandboxConfirmer: a first check asks it alone.
func TestHoldsSandboxConfirmerAloneOnFreshChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		var xs, cs atomic.Int32
		x := ports.SandboxExtractorFunc(func(ctx context.Context, p *corev1.Pod) (string, error) {
			xs.Add(1)
			return w.extractor().SandboxID(ctx, p)
		})
		sc := ports.SandboxExtractorFunc(func(ctx context.Context, p *corev1.Pod) (string, error) {
			cs.Add(1)
			return w.extractor().SandboxID(ctx, p)
		})
		e := newEngine(t, w, deletion.Options{SandboxExtractor: x, SandboxConfirmer: sc})
		_ = e.Track(w.add("a", "uid-a", ""))
		e.Sweep(context.Background())
		if xs.Load() != 0 || cs.Load() != 1 {
			t.Fatalf("first check: extractor %d confirmer %d", xs.Load(), cs.Load())
		}
		e.TriggerPod(key("a"))
		deletiontest.Start(t, e)
		advance(0)
		if xs.Load() != 0 || cs.Load() != 2 {
			t.Fatalf("triggered check: extractor %d confirmer %d", xs.Load(), cs.Load())
		}
	})
}

// Observer events of a PU one at a time in order, with Track/Untrack racing a check.
func TestHoldsUntrackTrackDuringCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		inv := deletiontest.NewInventory()
		release := make(chan struct{})
		var once sync.Once
		g := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			once.Do(func() { <-release })
			return w.getter().GetPod(ctx, k)
		})
		ev := &deletiontest.Events{}
		e := deletiontest.NewEngine(t, g, w.policy(), deletion.Options{NodeName: node, SandboxExtractor: w.extractor(), Observer: deletion.Observers(inv, ev)})
		_ = e.Track(w.add("a", "uid-a", ""))
		w.setSandbox("a", "s1")
		go e.Sweep(context.Background())
		synctest.Wait()
		e.Untrack("uid-a")
		_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a"), SandboxID: "s2"})
		close(release)
		synctest.Wait()
		for _, x := range ev.All() {
			t.Logf("%v %v %v", x.Kind, x.PU, x.Verdict)
		}
		st := e.Status()
		if len(st) != 1 || st[0].SandboxID != "s2" {
			t.Fatalf("status %+v", st)
		}
		if pus := inv.PUs(); len(pus) != 1 || pus[0].SandboxID != "s2" {
			t.Fatalf("journal %+v", pus)
		}
	})
}
