package promises_test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Holds (randomized, fixed seed, well-formed inputs only: labels present, CRI states, no
// duplicates, one namespace per sandbox): a first DestroyPU never frees a sandbox the runtime
// lists ready, nor anything of a gone pod the runtime runs or may be creating, nor, for a
// sandbox change, another sandbox or one that may be being created with none created later;
// without a runtime, only sandboxes whose namespace is gone.
func TestAuditHoldsRandomWellFormed(t *testing.T) {
	base := time.Now().Add(-time.Hour)
	freedTotal := 0
	defer func() { t.Logf("sandboxes freed over all iterations: %d", freedTotal) }()
	r := rand.New(rand.NewSource(7))
	for it := 0; it < 400; it++ {
		e := newEnv(t)
		type sbx struct {
			id            string
			listed, ready bool
			ns            int // 0 gone, 1 present, 2 unknown
			created       time.Time
		}
		n := 1 + r.Intn(3)
		var sbs []sbx
		var rsbs []*runtimeapi.PodSandbox
		noRuntime := r.Intn(5) == 0
		for i := 0; i < n; i++ {
			s := sbx{id: fmt.Sprintf("s%d", i), listed: r.Intn(2) == 0, ns: r.Intn(3), created: base.Add(time.Duration(r.Intn(4)) * time.Minute)}
			s.ready = s.listed && r.Intn(2) == 0
			path := ""
			switch s.ns {
			case 0:
				path = e.netns("ns"+s.id, false)
			case 1:
				path = e.netns("ns"+s.id, true)
			case 2:
				path = "/nonexistent-dir-audit7/ns" + s.id
			}
			e.writeEntry(entryOpt{sandbox: s.id, uid: uidA, netns: path, written: s.created})
			if s.listed {
				st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
				if s.ready {
					st = runtimeapi.PodSandboxState_SANDBOX_READY
				}
				rsbs = append(rsbs, sandbox(s.id, uidA, st, s.created))
			}
			sbs = append(sbs, s)
		}
		extraReady := r.Intn(4) == 0
		if extraReady {
			rsbs = append(rsbs, sandbox("rt-only", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, base.Add(10*time.Minute)))
		}
		rt := &fakeRuntime{sbs: rsbs}
		col := e.collector(rt, 0)
		if noRuntime {
			col = e.collector(nil, 0)
		}
		isGone := r.Intn(2) == 0
		var err error
		target := sbs[r.Intn(n)]
		if isGone {
			err = col.DestroyPU(context.Background(), goneDefault(uidA))
		} else {
			err = col.DestroyPU(context.Background(), changedDefault(uidA, target.id))
		}
		runs := extraReady && !noRuntime
		for _, s := range sbs {
			if !noRuntime && (s.ready || (!s.listed && s.ns == 1)) {
				runs = true
			}
		}
		for _, s := range sbs {
			if !e.delled(s.id) {
				continue
			}
			freedTotal++
			bad := ""
			switch {
			case noRuntime && s.ns != 0:
				bad = "no runtime, namespace not gone"
			case s.ready && !noRuntime:
				bad = "listed ready"
			case isGone && runs:
				bad = "gone pod the runtime runs or may be creating"
			case !isGone && s.id != target.id:
				bad = "not the changed sandbox"
			case !isGone && !noRuntime && !s.listed && s.ns == 1:
				later := extraReady
				for _, o := range sbs {
					if o.created.After(s.created) {
						later = true
					}
				}
				if !later {
					bad = "may be being created, none created later"
				}
			}
			if bad != "" {
				t.Fatalf("iteration %d: freed %s (%s); sandboxes %+v extraReady %v noRuntime %v gone %v target %s err %v", it, s.id, bad, sbs, extraReady, noRuntime, isGone, target.id, err)
			}
		}
	}
}
