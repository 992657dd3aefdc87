package contracts_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// go doc Collector: "Build it with New; its methods are safe from any goroutine." Run under -race.
func TestHoldsMethodsSafeFromAnyGoroutine(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("sb%d", i)
		e.writeEntry("net1", id, "eth0", e.goneNetNS(id), fmt.Sprintf("uid-%d", i%3), netConf("net1", e.data, false), fmt.Sprintf("10.9.0.%d", i+1))
		e.writeReservation(e.data, "net1", fmt.Sprintf("10.9.1.%d", i+1), "c"+id, "eth0", time.Hour)
	}
	rt := &testcni.Runtime{}
	rt.Set(sandbox("sb1", "uid-1", true, time.Now()))
	o := e.opts(rt, (&logRec{}).logger())
	o.ResyncInterval = 5 * time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Resync(ctx, testcni.NopTracker{}) }()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				uid := fmt.Sprintf("uid-%d", (i+w)%3)
				ev := ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod-" + uid}, SandboxID: fmt.Sprintf("sb%d", i%6), Reason: ports.ReasonPodGone}
				switch (i + w) % 6 {
				case 0:
					_ = c.DestroyPU(ctx, ev)
				case 1:
					_ = c.DryRunDestroyPU(ctx, ev)
				case 2:
					_, _ = c.SandboxDead(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}, ev.SandboxID)
				case 3:
					_, _ = c.ListPUs(ctx)
				case 4:
					_ = testcni.Address(t, c, fmt.Sprintf("10.9.0.%d", i%6+1))
					_ = c.WouldFree()
				case 5:
					ev.Reason = ports.ReasonSandboxChanged
					_ = c.DestroyPU(ctx, ev)
					_ = c.Requeue(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ev.Pod.Name, Namespace: "ns"}})
				}
			}
		}(w)
	}
	wg.Wait()
}
