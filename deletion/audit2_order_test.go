package deletion_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Untrack (doc: "It reports whether the PU was tracked, once the Observer has been told (EventUntracked, after every
// earlier event of the PU)"; Observer: "The events of one PU reach it one at a time, in the order of the moves that
// made them"). A check's Confirmer vetoes the cache's destroy; while the check then asks the SandboxConfirmer, the PU
// is untracked. The veto came before the Untrack, so its EventVetoed must reach the Observer before EventUntracked.
func TestAuditUntrackToldAfterEveryEarlierEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		pu := cluster.CreatePod(nsKey("web"), "node-a", "") // no sandbox yet
		var cacheLost atomic.Bool
		cache := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			if cacheLost.Load() {
				return nil, fmt.Errorf("cache: %w", ports.ErrPodNotFound) // a lagging cache
			}
			return cluster.GetPod(ctx, k)
		})
		var armed atomic.Bool
		asked, release := make(chan struct{}), make(chan struct{})
		runtime := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
			if armed.Load() {
				close(asked)
				<-release
			}
			return cluster.SandboxID(ctx, pod)
		})
		events := &deletiontest.Events{}
		engine := deletiontest.NewEngine(t, cache, &deletiontest.Policy{}, deletion.Options{
			NodeName: "node-a", Confirmer: cluster.APIServer(), SandboxExtractor: cluster, SandboxConfirmer: runtime,
			Observer: events,
		})
		if err := engine.Track(pu); err != nil {
			t.Fatal(err)
		}
		engine.Sweep(t.Context()) // first check: no sandbox yet, row 8
		if err := cluster.SetSandbox(pu.Pod, "sb-1"); err != nil {
			t.Fatal(err)
		}
		cacheLost.Store(true)
		armed.Store(true)
		swept := make(chan struct{})
		go func() { engine.Sweep(t.Context()); close(swept) }()
		<-asked // the Confirmer has vetoed the destroy; the SandboxConfirmer is asked about row 7
		if !engine.Untrack(pu.PUID) {
			t.Fatal("not tracked")
		}
		close(release)
		<-swept
		var kinds []deletion.EventKind
		for _, ev := range events.All() {
			kinds = append(kinds, ev.Kind)
		}
		vetoed, untracked := -1, -1
		for i, k := range kinds {
			switch k {
			case deletion.EventVetoed:
				vetoed = i
			case deletion.EventUntracked:
				untracked = i
			}
		}
		if vetoed < 0 {
			t.Fatalf("no EventVetoed: %v", kinds)
		}
		if vetoed > untracked {
			t.Errorf("the Observer heard %v: the veto made before Untrack after its EventUntracked", kinds)
		}
	})
}
