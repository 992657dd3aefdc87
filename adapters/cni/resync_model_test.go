package cni_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// triggerTimes is a Tracker that records when each pod was triggered; it refuses the next refuse Tracks, and the
// next Track hangs until hang is closed, when hang is set.
type triggerTimes struct {
	mu     sync.Mutex
	at     map[types.NamespacedName][]time.Time
	refuse int
	hang   chan struct{}
}

func (r *triggerTimes) Track(ports.PU) error {
	r.mu.Lock()
	if hang := r.hang; hang != nil {
		r.hang = nil
		r.mu.Unlock()
		<-hang
		return nil
	}
	defer r.mu.Unlock()
	if r.refuse > 0 {
		r.refuse--
		return errors.New("refused")
	}
	return nil
}

func (r *triggerTimes) Untrack(string) bool { return false }
func (r *triggerTimes) TriggerPod(p types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at[p] = append(r.at[p], time.Now())
}

// triggeredWithin reports whether p was triggered in [from, from+d].
func (r *triggerTimes) triggeredWithin(p types.NamespacedName, from time.Time, d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.at[p] {
		if !at.Before(from) && !at.After(from.Add(d)) {
			return true
		}
	}
	return false
}

// FuzzRequeueIsNeverLost drives Requeue (Collector.Requeue: "asks a running Resync to list the cache at once, so that
// the pod's next sandbox in the cache is tracked and checked without waiting for ResyncInterval") through what may
// meet it, one step per byte: a plain requeue; one whose list a DestroyPU of the pod ends during; one whose Resync
// returns while its list reads, and is called again; one while the Runtime fails; one while another pod's entry of
// the network is cut short (libcni writing it); one while the pod's own entry is; one whose Track the Tracker refuses
// once; one whose list a Resync that returns leaves behind, its Track hanging, Resync called again; time passing; a
// pod created since that another caller than the engine lists with ListPUs; one while the cache cannot be listed (a
// config of ConfDir cut short), Resync's first list or a later one. Whatever the steps, the pod's last
// requeue is triggered within 10 seconds (ResyncInterval is a minute), and the pod created since within two
// intervals.
func FuzzRequeueIsNeverLost(f *testing.F) {
	f.Add([]byte{0, 5, 3, 4})
	f.Add([]byte{1})       // a DestroyPU of the pod ends while the requeue's list reads
	f.Add([]byte{2})       // the Resync returns while the requeue's list reads
	f.Add([]byte{4, 4, 3}) // lists that cannot tell of the pod, then a Runtime that fails
	f.Add([]byte{6})       // the Tracker refuses the requeued pod's Track once
	f.Add([]byte{7})       // libcni writes the requeued pod's own entry
	f.Add([]byte{8})       // a Resync returns, its list's Track hanging, and is called again
	f.Add([]byte{9, 0})    // a pod created since, listed by another caller than the engine
	f.Add([]byte{10})      // Resync's first list fails: the cache cannot be listed
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 10 {
			steps = steps[:10]
		}
		c := newCacheDir(t)
		synctest.Test(t, func(t *testing.T) {
			old := c.write(entry{network: "podnet", sandbox: "A", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Hour})
			next := c.write(entry{network: "podnet", sandbox: "B", uid: "u1", namespace: "ns", name: "pod-u1", age: time.Minute})
			other := c.write(entry{network: "podnet", sandbox: "Z", uid: "u2", namespace: "ns", name: "pod-u2"})
			rt := &gatedRuntime{}
			coll := c.collectorWith(rt, 0)
			_, err := coll.ListPUs(t.Context()) // the engine's Inventory
			require.NoError(t, err)
			r := &triggerTimes{at: map[types.NamespacedName][]time.Time{}}
			run := func() (stop func()) {
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- coll.Resync(ctx, r) }()
				synctest.Wait()
				return func() { cancel(); require.NoError(t, <-done) }
			}
			stop := run()
			pod := types.NamespacedName{Namespace: "ns", Name: "pod-u1"}
			var last, appeared time.Time
			var hangs []chan struct{} // Tracks hanging in lists left behind, released at the end
			requeue := func() {
				require.NoError(t, coll.Requeue(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-u1", UID: "u1"}}))
				last = time.Now()
			}
			for _, s := range steps {
				switch s % 11 {
				case 0:
					requeue()
				case 1: // the engine freed A, and requeues; a DestroyPU of A ends while the requeue's list reads
					_ = os.Remove(filepath.Join(c.dir, "results", old))
					rt.close()
					requeue()
					<-rt.waiting
					require.NoError(t, coll.DestroyPU(t.Context(), ports.DestroyEvent{PUID: "u1", Pod: pod, SandboxID: "A", Reason: ports.ReasonSandboxChanged}))
					rt.open()
				case 2: // Resync returns while the requeue's list reads, and is called again
					rt.close()
					requeue()
					<-rt.waiting
					stop()
					rt.open()
					synctest.Wait()
					stop = run()
				case 3: // the Runtime fails for half a second
					rt.set(errors.New("rpc error: code = Unavailable"))
					requeue()
					synctest.Wait()
					time.Sleep(500 * time.Millisecond)
					rt.set(nil)
				case 4: // libcni writes another pod's entry of the network for a tenth of a second
					whole := c.cutShort(other)
					requeue()
					synctest.Wait()
					time.Sleep(100 * time.Millisecond)
					c.writeRaw(other, whole, 0)
				case 5:
					time.Sleep(time.Duration(s) * 10 * time.Millisecond)
				case 6: // the Tracker refuses the next Track, the requeued pod's
					r.mu.Lock()
					r.refuse = 1
					r.mu.Unlock()
					requeue()
				case 7: // the engine freed A; libcni writes the requeued pod's own entry, now its only one, for a tenth of a second
					_ = os.Remove(filepath.Join(c.dir, "results", old))
					whole := c.cutShort(next)
					requeue()
					synctest.Wait()
					time.Sleep(100 * time.Millisecond)
					c.writeRaw(next, whole, time.Minute)
				case 9: // after Resync's first list, a pod created since appears in the cache, and another caller than the
					// engine lists ListPUs (before that list, an answer of ListPUs is taken as the engine's Inventory)
					time.Sleep(time.Minute + time.Second)
					synctest.Wait()
					if appeared.IsZero() {
						c.write(entry{network: "podnet", sandbox: "N", uid: "u3", namespace: "ns", name: "pod-u3"})
						appeared = time.Now()
					}
					_, err := coll.ListPUs(t.Context())
					require.NoError(t, err)
				case 10: // the cache cannot be listed for half a second (a config of ConfDir cut short)
					remove := c.cutConfig(t)
					requeue()
					synctest.Wait()
					time.Sleep(500 * time.Millisecond)
					remove()
				case 8: // the requeue's list hangs in a Track; Resync returns, leaving it behind, and is called again
					hang := make(chan struct{})
					hangs = append(hangs, hang)
					r.mu.Lock()
					r.hang = hang
					r.mu.Unlock()
					requeue()
					synctest.Wait()
					stop()
					stop = run()
				}
				synctest.Wait()
			}
			time.Sleep(15 * time.Second)
			if !appeared.IsZero() {
				time.Sleep(2*time.Minute + time.Second) // the lists of two intervals: one may meet a refused Track
			}
			synctest.Wait()
			stop()
			for _, h := range hangs {
				close(h)
			}
			if !last.IsZero() && !r.triggeredWithin(pod, last, 10*time.Second) {
				t.Errorf("steps %v: the pod's last requeue, at %v, was not triggered within 10s: triggers at %v", steps, last, r.at[pod])
			}
			created := types.NamespacedName{Namespace: "ns", Name: "pod-u3"}
			if !appeared.IsZero() && !r.triggeredWithin(created, appeared, 2*time.Minute+time.Second) {
				t.Errorf("steps %v: a pod created at %v, listed by another caller's ListPUs, was not triggered within two intervals: triggers at %v",
					steps, appeared, r.at[created])
			}
		})
	})
}
