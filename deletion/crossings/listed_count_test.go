package crossings_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Event.Count: "the number of PUs restored: new, or given their sandbox (EventRestored)"; adoptListed's rule (one
// listed twice is restored once) holds for a PU idle when the list comes. Here the PU's first check runs when a retry of
// the list answers it twice.
func TestAuditRestoredCountsEachPUOnce(t *testing.T) {
	for _, checking := range []bool{false, true} {
		t.Run(map[bool]string{false: "idle", true: "checking"}[checking], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cl := deletiontest.NewCluster()
				pu := cl.CreatePod(key("a"), node, "sb-1")
				lists := 0
				inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
					lists++
					if lists == 1 {
						return nil, errors.New("journal busy")
					}
					return []ports.PU{pu, pu}, nil // the same PU listed twice
				})
				release := make(chan struct{})
				ext := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
					<-release
					return cl.SandboxID(ctx, pod)
				})
				rec := &recorder{}
				e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: node,
					SandboxExtractor: ext, Inventory: inv, Observer: rec, RetryMinDelay: time.Second, CheckTimeout: time.Minute})
				trackPU := pu
				trackPU.SandboxID = ""
				_ = e.Track(trackPU)
				if checking {
					e.TriggerPod(pu.Pod)
				}
				deletiontest.Start(t, e)
				deletiontest.Advance(3 * time.Second)
				close(release)
				deletiontest.Advance(time.Second)
				var restored []deletion.Event
				rec.mu.Lock()
				for _, ev := range rec.evs {
					if ev.Kind == deletion.EventRestored {
						restored = append(restored, ev)
					}
				}
				rec.mu.Unlock()
				if len(restored) != 1 || restored[0].Count != 1 {
					t.Fatalf("EventRestored %+v: want one, Count 1 (one PU given its sandbox)", restored)
				}
			})
		})
	}
}
