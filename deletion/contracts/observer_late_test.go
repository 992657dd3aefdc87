package contracts_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// deletion/observer.go:75-77 (EventChecked): "Err holds the failures of its ports, if any (errors.Join): the one that
// kept the PU (GetPod, the sandbox port, the SandboxProber, a confirmer), a failed DestroyPU"; docs/sdk/ports.md:18-23:
// it is a port that "succeeds past the deadline" whose "lateness is a failure of the check (EventChecked's Err)". The
// Observer is no port: one blocked in a check "holds its Workers slot and is seen as stuck past the check's deadline,
// as a port is" (observer.go:17-18), for the slot and LivenessCheck.
//
// The pod cache says the pod is gone, the Confirmer (the API server) says it lives: a veto, told to the Observer as
// EventVetoed in the middle of the check. Every port answered at once and none failed; the Observer takes two
// CheckTimeouts to hear the veto. The check's EventChecked carries an Err that blames a port for answering past the
// deadline.
func TestASlowObserverMidCheckIsNoLatePort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.add("a", "uid-a", "")
		cache := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, ports.ErrPodNotFound // a lagging cache
		})
		var mu sync.Mutex
		var checked []deletion.Event
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			switch ev.Kind {
			case deletion.EventVetoed:
				time.Sleep(2 * time.Second) // a slow journal commit
			case deletion.EventChecked:
				mu.Lock()
				checked = append(checked, ev)
				mu.Unlock()
			}
		})
		e, err := deletion.New(cache, w.policy(), deletion.Options{NodeName: node, Confirmer: w.getter(),
			CheckTimeout: time.Second, Observer: obs, Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Track(ports.PU{PUID: "uid-a", Pod: key("a")}); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background())
		mu.Lock()
		defer mu.Unlock()
		if len(checked) != 1 {
			t.Fatalf("EventChecked told %d times", len(checked))
		}
		if ev := checked[0]; ev.Err != nil {
			t.Fatalf("no port failed or answered late (GetPod: not found, Confirmer: the live pod, both at once), "+
				"yet EventChecked (verdict %v) has Err: %v", ev.Verdict, ev.Err)
		}
	})
}
