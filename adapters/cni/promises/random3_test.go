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

// Holds (randomized, fixed seed, with nonsense around the reported breaks' causes excluded:
// unknown states on other sandboxes, times in the future, zero or negative CreatedAt, empty IDs,
// other pods' sandboxes, the filter honored or not, truncated entries, disableGC networks in the
// cache or in ConfDir as a boolean, DestroyPU repeated across NewestSandboxTimeout): a sandbox
// listed once, ready, with its label is never freed, nor anything of a gone pod that has one;
// no disableGC network and no truncated entry is ever DELed.
func TestAuditHoldsRandomNonsense(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	freed := 0
	for it := 0; it < 120; it++ {
		seed := r.Int63()
		synctest.Test(t, func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			e := newEnv(t)
			rt := &fakeRuntime{ignoreFilter: r.Intn(2) != 0}
			n := 1 + r.Intn(3)
			readyIDs := map[string]bool{}
			keepIfs := map[string]bool{} // "<sandbox> <ifName>" never to DEL
			times := []time.Time{time.Now().Add(48 * time.Hour), {}, time.Unix(0, -5), time.Now().Add(-time.Hour), time.Now()}
			if r.Intn(2) == 0 {
				writeFile(t, e.conf, "10-cfkeep.conflist", `{"cniVersion":"1.0.0","name":"cfkeep","disableGC":true,"plugins":[{"type":"fakeplug"}]}`)
			} else {
				writeFile(t, e.conf, "10-cfkeep.conf", `{"cniVersion":"1.0.0","name":"cfkeep","type":"fakeplug","disableGC":true}`)
			}
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("s%d", i)
				ns := e.netns("ns"+id, r.Intn(2) == 0)
				if r.Intn(4) == 0 {
					ns = "/nonexistent-audit7/" + id
				}
				e.writeEntry(entryOpt{network: "net1", sandbox: id, uid: uidA, netns: ns})
				if r.Intn(2) == 0 {
					e.writeEntry(entryOpt{network: "ckeep", sandbox: id, ifName: "eth1", uid: uidA, netns: ns,
						config: `{"cniVersion":"1.0.0","name":"ckeep","disableGC":true,"plugins":[{"type":"fakeplug"}]}`})
					keepIfs[id+" eth1"] = true
				}
				if r.Intn(2) == 0 {
					e.writeEntry(entryOpt{network: "cfkeep", sandbox: id, ifName: "eth2", uid: uidA, netns: ns})
					keepIfs[id+" eth2"] = true
				}
				if r.Intn(4) == 0 {
					f := e.writeEntry(entryOpt{network: "trunc", sandbox: id, ifName: "eth3", uid: uidA, netns: ns})
					b, _ := os.ReadFile(f)
					os.WriteFile(f, b[:len(b)/2], 0o600)
					keepIfs[id+" eth3"] = true
				}
				switch r.Intn(3) {
				case 0: // listed ready, once, labelled
					rt.sbs = append(rt.sbs, sandbox(id, uidA, runtimeapi.PodSandboxState_SANDBOX_READY, times[r.Intn(len(times))]))
					readyIDs[id] = true
				case 1:
					rt.sbs = append(rt.sbs, sandbox(id, uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, times[r.Intn(len(times))]))
				}
			}
			// Nonsense around them.
			for k := r.Intn(4); k > 0; k-- {
				switch r.Intn(4) {
				case 0:
					rt.sbs = append(rt.sbs, sandbox("", uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, times[r.Intn(len(times))]))
				case 1:
					rt.sbs = append(rt.sbs, sandbox(fmt.Sprintf("rt%d", k), uidA, runtimeapi.PodSandboxState(3+r.Intn(5)), times[r.Intn(len(times))]))
				case 2:
					rt.sbs = append(rt.sbs, sandbox(fmt.Sprintf("other%d", k), "someone-else", runtimeapi.PodSandboxState_SANDBOX_READY, times[r.Intn(len(times))]))
				case 3:
					rt.sbs = append(rt.sbs, sandbox(fmt.Sprintf("rtstop%d", k), uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, times[r.Intn(len(times))]))
				}
			}
			r.Shuffle(len(rt.sbs), func(i, j int) { rt.sbs[i], rt.sbs[j] = rt.sbs[j], rt.sbs[i] })
			c := e.collector(rt, 0)
			isGone := r.Intn(2) == 0
			target := fmt.Sprintf("s%d", r.Intn(n))
			for k := 0; k < 4; k++ {
				c.ListPUs(context.Background())
				if isGone {
					c.DestroyPU(context.Background(), goneDefault(uidA))
				} else {
					c.DestroyPU(context.Background(), changedDefault(uidA, target))
				}
				time.Sleep(3 * time.Minute)
			}
			b, _ := os.ReadFile(e.delLog)
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if line == "" {
					continue
				}
				freed++
				id := strings.Fields(line)[0]
				switch {
				case readyIDs[id]:
					t.Fatalf("seed %d: freed %s, listed ready: %s", seed, id, b)
				case isGone && len(readyIDs) > 0:
					t.Fatalf("seed %d: freed %s of a gone pod with a ready sandbox: %s", seed, id, b)
				case keepIfs[line]:
					t.Fatalf("seed %d: DEL %q of a disableGC network or truncated entry: %s", seed, line, b)
				}
			}
			if _, err := os.Stat(filepath.Join(e.cache, "results")); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("DELs: %d", freed)
}
