package promises_test

// The collector's promises over random inputs and sequences (fixed seeds):
// well-formed or with nonsense around them, across NewestSandboxTimeout, with
// sandboxes moving from creating to ready to stopped to removed while the
// engine's calls come in any order, and a live pod's old sandboxes drained: a
// sandbox the runtime lists ready is never freed, nor anything of a gone pod
// with a ready sandbox, and what is dead is freed.

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
				path = "/nonexistent-dir/ns" + s.id
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
				path := "/nonexistent-dir/ns" + s.id
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

// Holds (randomized, fixed seed, with nonsense:
// unknown states on other sandboxes, times in the future, zero or negative CreatedAt, empty IDs
// (listed stopped, or ready: the pod runs), other pods' sandboxes, the filter honored or not, truncated entries, disableGC networks in the
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
					ns = "/nonexistent/" + id
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
			runsNoID := false // a ready sandbox of the pod listed without an ID: the pod runs
			for k := r.Intn(4); k > 0; k-- {
				switch r.Intn(5) {
				case 0:
					rt.sbs = append(rt.sbs, sandbox("", uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, times[r.Intn(len(times))]))
				case 1:
					rt.sbs = append(rt.sbs, sandbox(fmt.Sprintf("rt%d", k), uidA, runtimeapi.PodSandboxState(3+r.Intn(5)), times[r.Intn(len(times))]))
				case 2:
					rt.sbs = append(rt.sbs, sandbox(fmt.Sprintf("other%d", k), "someone-else", runtimeapi.PodSandboxState_SANDBOX_READY, times[r.Intn(len(times))]))
				case 3:
					rt.sbs = append(rt.sbs, sandbox(fmt.Sprintf("rtstop%d", k), uidA, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, times[r.Intn(len(times))]))
				case 4:
					rt.sbs = append(rt.sbs, sandbox("", uidA, runtimeapi.PodSandboxState_SANDBOX_READY, times[r.Intn(len(times))]))
					runsNoID = true
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
				case isGone && (len(readyIDs) > 0 || runsNoID):
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
