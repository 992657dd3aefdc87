package promises_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Holds (randomized, fixed seed): a live pod whose old sandboxes are stopped (some removed, their
// namespace gone) and whose current one is ready; an engine-like loop (ListPUs, then DestroyPU of
// the PU's sandbox as a sandbox change while it is not the current one) frees every old sandbox
// but those given up (ErrOrderUnknown, documented), and never the current one.
func TestAuditHoldsRandomLivePodDrain(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for it := 0; it < 150; it++ {
		seed := r.Int63()
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			e := newEnv(t)
			rt := &fakeRuntime{}
			n := 2 + r.Intn(4)
			cur := fmt.Sprintf("s%d", n-1)
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("s%d", i)
				removed := i < n-1 && r.Intn(2) == 0
				hidden := i < n-1 && !removed && r.Intn(2) == 0 // not listed, namespace still there
				e.writeEntry(entryOpt{sandbox: id, uid: uidA, netns: e.netns("ns"+id, !removed), written: time.Unix(int64(1000+i+r.Intn(3)-1), 0)})
				switch {
				case hidden:
				case id == cur:
					rt.sbs = append(rt.sbs, sandbox(id, uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Unix(int64(1000+i), 0)))
				case !removed:
					rt.sbs = append(rt.sbs, sandbox(id, uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, time.Unix(int64(1000+i), 0)))
				}
			}
			c := e.collector(rt, time.Minute)
			ctx := context.Background()
			givenUp := map[string]bool{}
			for k := 0; k < 3*n; k++ {
				pus, _ := c.ListPUs(ctx)
				if len(pus) != 1 || pus[0].SandboxID == cur || pus[0].SandboxID == "" {
					break
				}
				err := c.DestroyPU(ctx, changedDefault(uidA, pus[0].SandboxID))
				if errors.Is(err, cni.ErrOrderUnknown) {
					givenUp[pus[0].SandboxID] = true
				}
				time.Sleep(40 * time.Second)
			}
			if e.delled(cur) {
				t.Fatalf("seed %d: the current sandbox was freed", seed)
			}
			left, _ := os.ReadDir(filepath.Join(e.cache, "results"))
			for _, f := range left {
				id := strings.Split(f.Name(), "-")[1]
				if id != cur && !givenUp[id] {
					t.Fatalf("seed %d: old sandbox %s left, not given up (given up: %v)", seed, id, givenUp)
				}
			}
		})
	}
}
