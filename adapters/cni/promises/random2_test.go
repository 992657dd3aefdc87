package promises_test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Holds (randomized, fixed seed, well-formed inputs, DestroyPU repeated across
// NewestSandboxTimeout): a sandbox the runtime lists ready is never freed; a gone pod with a
// ready sandbox loses nothing; a sandbox change frees its sandbox only; without a runtime only
// sandboxes whose namespace is gone are freed.
func TestAuditHoldsRandomAcrossTimeout(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	freed := 0
	for it := 0; it < 120; it++ {
		n := 1 + r.Intn(3)
		type sbx struct {
			id            string
			listed, ready bool
			ns            int
		}
		var sbs []sbx
		for i := 0; i < n; i++ {
			s := sbx{id: fmt.Sprintf("s%d", i), listed: r.Intn(2) == 0, ns: r.Intn(3)}
			s.ready = s.listed && r.Intn(2) == 0
			sbs = append(sbs, s)
		}
		noRuntime, isGone, extraReady := r.Intn(5) == 0, r.Intn(2) == 0, r.Intn(4) == 0
		target := sbs[r.Intn(n)].id
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t)
			var rsbs []*runtimeapi.PodSandbox
			for i, s := range sbs {
				path := "/nonexistent-dir-audit7/ns" + s.id
				if s.ns < 2 {
					path = e.netns("ns"+s.id, s.ns == 1)
				}
				e.writeEntry(entryOpt{sandbox: s.id, uid: uidA, netns: path})
				if s.listed {
					st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
					if s.ready {
						st = runtimeapi.PodSandboxState_SANDBOX_READY
					}
					rsbs = append(rsbs, sandbox(s.id, uidA, st, time.Now().Add(time.Duration(i)*time.Second)))
				}
			}
			if extraReady {
				rsbs = append(rsbs, sandbox("rt-only", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Now()))
			}
			col := e.collector(&fakeRuntime{sbs: rsbs}, 0)
			if noRuntime {
				col = e.collector(nil, 0)
			}
			anyReady := extraReady && !noRuntime
			for _, s := range sbs {
				anyReady = anyReady || (s.ready && !noRuntime)
			}
			for k := 0; k < 4; k++ {
				if isGone {
					col.DestroyPU(context.Background(), goneDefault(uidA))
				} else {
					col.DestroyPU(context.Background(), changedDefault(uidA, target))
				}
				time.Sleep(3 * time.Minute)
			}
			for _, s := range sbs {
				if !e.delled(s.id) {
					continue
				}
				freed++
				bad := ""
				switch {
				case noRuntime && s.ns != 0:
					bad = "no runtime, namespace not gone"
				case s.ready && !noRuntime:
					bad = "listed ready"
				case isGone && anyReady:
					bad = "gone pod with a ready sandbox"
				case !isGone && s.id != target:
					bad = "not the changed sandbox"
				}
				if bad != "" {
					t.Fatalf("iteration %d: freed %s (%s): %+v extraReady %v noRuntime %v gone %v target %s", it, s.id, bad, sbs, extraReady, noRuntime, isGone, target)
				}
			}
		})
	}
	t.Logf("sandboxes freed: %d", freed)
}
