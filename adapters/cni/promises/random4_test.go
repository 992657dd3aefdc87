package promises_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Holds (randomized sequences, fixed seed, well-formed runtime): sandboxes move creating ->
// ready -> stopped -> removed (namespace gone) while the engine's calls come in any order
// (ListPUs, SandboxDead, DestroyPU of a sandbox change or of the gone pod) with time passing.
// No DEL ever runs for a sandbox listed ready at that moment; and once the pod is gone and every
// sandbox is stopped and removed, DestroyPU frees every attachment (no leak is lost, given-up
// sandboxes included).
func TestAuditHoldsRandomSequences(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for it := 0; it < 300; it++ {
		seed := r.Int63()
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			e := newEnv(t)
			rt := &fakeRuntime{}
			c := e.collector(rt, 2*time.Minute)
			ctx := context.Background()
			type sb struct {
				id    string
				state int // 0 creating, 1 ready, 2 stopped, 3 removed
			}
			var sbs []*sb
			newSandbox := func() {
				s := &sb{id: fmt.Sprintf("s%d", len(sbs))}
				e.netns("ns"+s.id, true)
				e.writeEntry(entryOpt{sandbox: s.id, uid: uidA, netns: filepath.Join(e.netnsDir, "ns"+s.id)})
				sbs = append(sbs, s)
			}
			sync := func() {
				rt.mu.Lock()
				rt.sbs = nil
				for i, s := range sbs {
					switch s.state {
					case 1:
						rt.sbs = append(rt.sbs, sandbox(s.id, uidA, runtimeapi.PodSandboxState_SANDBOX_READY, time.Unix(int64(1000+i), 0)))
					case 2:
						rt.sbs = append(rt.sbs, sandbox(s.id, uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, time.Unix(int64(1000+i), 0)))
					}
				}
				rt.mu.Unlock()
			}
			delsBefore := 0
			check := func(what string) {
				b, _ := os.ReadFile(e.delLog)
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if string(b) == "" {
					lines = nil
				}
				for _, l := range lines[delsBefore:] {
					id := strings.Fields(l)[0]
					for _, s := range sbs {
						if s.id == id && s.state == 1 {
							t.Fatalf("seed %d: %s freed %s while it is listed ready", seed, what, id)
						}
					}
				}
				delsBefore = len(lines)
			}
			newSandbox()
			podGone := false
			for step := 0; step < 25; step++ {
				switch k := r.Intn(9); {
				case k == 0 && !podGone && len(sbs) < 4:
					// the kubelet replaces the sandbox: the current one stops, a new one is created
					for _, s := range sbs {
						if s.state <= 1 {
							s.state = 2
						}
					}
					newSandbox()
				case k == 1:
					for _, s := range sbs {
						if s.state == 0 && r.Intn(2) == 0 {
							s.state = 1
						}
					}
				case k == 2:
					s := sbs[r.Intn(len(sbs))]
					if s.state == 2 {
						s.state = 3
						os.Remove(filepath.Join(e.netnsDir, "ns"+s.id))
					}
				case k == 3:
					c.ListPUs(ctx)
				case k == 4:
					c.SandboxDead(ctx, podOf(uidA), sbs[r.Intn(len(sbs))].id)
				case k == 5 && !podGone:
					sync()
					c.DestroyPU(ctx, changedDefault(uidA, sbs[r.Intn(len(sbs))].id))
					check("a sandbox change")
				case k == 6:
					podGone = true
					for _, s := range sbs {
						if s.state <= 1 {
							s.state = 2
						}
					}
				case k == 7:
					time.Sleep(time.Duration(r.Intn(150)) * time.Second)
				case k == 8 && podGone:
					sync()
					c.DestroyPU(ctx, goneDefault(uidA))
					check("a gone pod")
				}
				sync()
			}
			// The end: the pod is gone, every sandbox stopped and removed.
			for _, s := range sbs {
				s.state = 3
				os.Remove(filepath.Join(e.netnsDir, "ns"+s.id))
			}
			sync()
			for k := 0; k < 3; k++ {
				c.DestroyPU(ctx, goneDefault(uidA))
				time.Sleep(3 * time.Minute)
			}
			left, _ := os.ReadDir(filepath.Join(e.cache, "results"))
			if len(left) != 0 {
				var names []string
				for _, f := range left {
					names = append(names, f.Name())
				}
				t.Fatalf("seed %d: leaks left after the pod is gone and every sandbox dead: %v", seed, names)
			}
		})
	}
}
