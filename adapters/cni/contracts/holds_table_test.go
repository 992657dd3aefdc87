package contracts_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/cni-freeing.md:18-19, 122: row 1 "The runtime lists it ready | keep | ErrSandboxRunning (pod gone)".
func TestHoldsReadySandboxNeverFreed(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	rt := &testcni.Runtime{}
	rt.Set(sandbox("sb1", "uid-p", true, time.Now()))
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	if err := destroyGone(t, c, "uid-p", "sb1"); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) > 0 {
		t.Fatalf("err %v, DELs %v", err, e.dels())
	}
}

// docs/sdk/cni-freeing.md:26: row 9 "The pod is gone, and the runtime may be creating the sandbox (it does not list it,
// and its network namespace is there), refused for less than NewestSandboxTimeout | keep | ErrSandboxRunning".
func TestHoldsCreatingSandboxRefused(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.presentNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	if err := destroyGone(t, c, "uid-p", "sb1"); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) > 0 {
		t.Fatalf("err %v, DELs %v", err, e.dels())
	}
}

// docs/sdk/cni-freeing.md:79, 81: rows 15 and 17 keep a reservation of a listed sandbox, and one whose container has a
// young reservation in its network.
func TestHoldsListedAndYoungReservationsKept(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "listed", "eth0", time.Hour)
	e.writeReservation(e.data, "net1", "10.9.0.2", "young", "eth0", time.Hour)
	e.writeReservation(e.data, "net1", "fd00::2", "young", "eth0", time.Second)
	rt := &testcni.Runtime{}
	rt.Set(sandbox("listed", "uid-l", false, time.Now()))
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1", "10.9.0.2", "fd00::2")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("DELs %v", d)
	}
	if r := testcni.Address(t, c, "10.9.0.2").Reservations; len(r) != 1 || r[0].Decision.Row != 17 {
		t.Fatalf("page %+v", r)
	}
}

// docs/sdk/cni-freeing.md:80 (row 16) "A cache entry names its container ID": an entry cut before its container ID
// (named by its file) and a named pipe under libcni's name of an entry both name theirs.
func TestHoldsCutOrFIFOEntryNamesItsContainer(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "cutsb", "eth0", time.Hour)
	e.writeReservation(e.data, "net1", "10.9.0.2", "fifosb", "eth0", time.Hour)
	must(t, os.WriteFile(filepath.Join(e.cache, "results", "net2-cutsb-eth0"), []byte(`{"kind":"cniCacheV1","contai`), 0o600))
	must(t, unix.Mkfifo(filepath.Join(e.cache, "results", "net2-fifosb-eth0"), 0o600))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1", "10.9.0.2")
	if d := e.dels(); len(d) > 0 {
		t.Fatalf("DELs %v", d)
	}
}

// docs/sdk/cni-freeing.md:53-54: "The same verdicts order a pod's sandboxes for ListPUs (dead first, then those
// nothing is told of, then those that may be being created, the ready one last)".
func TestHoldsListPUsOrder(t *testing.T) {
	e := newEnv(t)
	rt := &testcni.Runtime{}
	rt.Set(sandbox("s-ready", "uid-p", true, time.Now().Add(-time.Hour)))
	ids := []string{"s-ready", "s-cre", "s-unk", "s-dead"}
	ns := map[string]string{"s-ready": e.presentNetNS("r"), "s-cre": e.presentNetNS("c"), "s-unk": "", "s-dead": e.goneNetNS("d")}
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	for i := len(ids); i > 0; i-- {
		for _, id := range ids[:i] {
			e.writeEntry("net1", id, "eth0", ns[id], "uid-p", netConf("net1", "", false), "10.9.0.5")
		}
		pus, err := c.ListPUs(context.Background())
		must(t, err)
		if len(pus) != 1 || pus[0].SandboxID != ids[i-1] {
			t.Fatalf("with %v: %+v", ids[:i], pus)
		}
		for _, id := range ids {
			_ = os.Remove(filepath.Join(e.cache, "results", "net1-"+id+"-eth0"))
		}
	}
}

// docs/sdk/cni-freeing.md:24-27 (rows 7, 8, 10) and go doc ErrOrderUnknown: a sandbox change refused for
// NewestSandboxTimeout is given up (permanent), passed over by ListPUs, and freed with its pod once the pod is gone.
func TestHoldsGiveUpThenFreedWithGonePod(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.presentNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.NewestSandboxTimeout = 20 * time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	ev := ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-p"}, SandboxID: "sb1", Reason: ports.ReasonSandboxChanged}
	if err := c.DestroyPU(context.Background(), ev); !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("first: %v", err)
	}
	time.Sleep(30 * time.Millisecond)
	if err := c.DestroyPU(context.Background(), ev); !errors.Is(err, cni.ErrOrderUnknown) || !ports.IsPermanent(err) {
		t.Fatalf("second: %v", err)
	}
	pus, err := c.ListPUs(context.Background())
	must(t, err)
	if len(pus) != 1 || pus[0].SandboxID != "" {
		t.Fatalf("ListPUs %+v", pus)
	}
	if err := destroyGone(t, c, "uid-p", ""); err != nil || len(e.dels()) != 1 {
		t.Fatalf("gone: %v, DELs %v", err, e.dels())
	}
}

// docs/sdk/cni-freeing.md:21-22 (rows 4, 5): without a runtime, a gone pod's sandbox whose namespace is gone is freed,
// and one whose namespace tells nothing is kept with ErrNoEvidence (the others freed).
func TestHoldsNoRuntimeNoEvidence(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "dead", "eth0", e.goneNetNS("dead"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	e.writeEntry("net1", "unknown", "eth0", "", "uid-p", netConf("net1", "", false), "10.9.0.6")
	c, err := cni.New(e.opts(nil, (&logRec{}).logger()))
	must(t, err)
	err = destroyGone(t, c, "uid-p", "dead")
	if !errors.Is(err, cni.ErrNoEvidence) || len(e.dels()) != 1 || e.dels()[0] != "DEL dead eth0" {
		t.Fatalf("err %v, DELs %q", err, e.dels())
	}
}

// go doc: DestroyPU and DryRunDestroyPU of a PU without a PUID are permanent errors; SandboxDead "fails for" a pod
// without a UID or a sandbox ID; Requeue "fails only for a nil pod"; Resync with a nil Tracker fails; a DestroyPU of a
// PU the cache holds nothing of is no error (ports.md: "a PU it does not know must be no error").
func TestHoldsAPIContracts(t *testing.T) {
	e := newEnv(t)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	ctx := context.Background()
	if err := c.DestroyPU(ctx, ports.DestroyEvent{}); !ports.IsPermanent(err) {
		t.Fatalf("DestroyPU no PUID: %v", err)
	}
	if err := c.DryRunDestroyPU(ctx, ports.DestroyEvent{}); !ports.IsPermanent(err) {
		t.Fatalf("DryRunDestroyPU no PUID: %v", err)
	}
	if _, err := c.SandboxDead(ctx, nil, "x"); err == nil {
		t.Fatal("SandboxDead nil pod")
	}
	if err := c.Requeue(ctx, nil); err == nil {
		t.Fatal("Requeue nil")
	}
	if err := c.Resync(ctx, nil); err == nil {
		t.Fatal("Resync nil")
	}
	if err := destroyGone(t, c, "unknown-uid", "unknown-sb"); err != nil {
		t.Fatalf("unknown PU: %v", err)
	}
}

// go doc AddressHandler: "GET or HEAD with the query ip=ADDR answers, as JSON, the AddressStatus ...; An ip that is
// no address is answered 400."
func TestHoldsAddressHandlerMethods(t *testing.T) {
	e := newEnv(t)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	for _, tc := range []struct {
		method, query string
		code          int
	}{{http.MethodGet, "?ip=10.9.0.5", 200}, {http.MethodHead, "?ip=10.9.0.5", 200}, {http.MethodPost, "?ip=10.9.0.5", 405}, {http.MethodGet, "?ip=10.9.0.5/16", 400}, {http.MethodGet, "", 400}} {
		rec := httptest.NewRecorder()
		c.AddressHandler().ServeHTTP(rec, httptest.NewRequest(tc.method, cni.AddressPath+tc.query, nil))
		if rec.Code != tc.code {
			t.Fatalf("%s %s: %d", tc.method, tc.query, rec.Code)
		}
	}
}

// docs/sdk/cni-freeing.md:43-45: "A running sandbox the runtime lists without an ID may be any sandbox: no reservation
// is freed while it is listed, and one that names no pod either makes the runtime's answer a failure".
func TestHoldsNoIDRunningSandboxKeepsReservations(t *testing.T) {
	for _, uid := range []string{"uid-x", ""} {
		e := newEnv(t)
		e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
		e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
		rt := &testcni.Runtime{}
		rt.Set(sandbox("", uid, true, time.Now()))
		if uid == "" {
			rt.Sandboxes[0].Labels, rt.Sandboxes[0].Metadata = nil, nil
		}
		c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
		must(t, err)
		sweepOnce(t, c, "10.9.0.1")
		st := testcni.Address(t, c, "10.9.0.1").Reservations
		want := 15
		if uid == "" {
			want = 14
		}
		if len(e.dels()) > 0 || len(st) != 1 || st[0].Decision.Row != want {
			t.Fatalf("uid %q: DELs %v, page %+v", uid, e.dels(), st)
		}
	}
}

// docs/sdk/cni-freeing.md:18, 23-24 (rows 1, 6, 7): a sandbox change keeps a ready sandbox (ErrNewestSandbox), frees one
// a later sandbox of the pod follows, and refuses one that may be being created with none later (ErrNewestSandbox).
func TestHoldsSandboxChangeRows(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		listed  bool // sb1 listed ready
		later   bool // sb2 listed, created later
		wantErr error
		wantDel bool
	}{{"row1", true, true, cni.ErrNewestSandbox, false}, {"row6", false, true, nil, true}, {"row7", false, false, cni.ErrNewestSandbox, false}} {
		e := newEnv(t)
		e.writeEntry("net1", "sb1", "eth0", e.presentNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
		rt := &testcni.Runtime{}
		var sbs []*runtimeapi.PodSandbox
		if tc.listed {
			sbs = append(sbs, sandbox("sb1", "uid-p", true, now.Add(-time.Hour)))
		}
		if tc.later {
			sbs = append(sbs, sandbox("sb2", "uid-p", true, now.Add(time.Hour)))
		}
		rt.Set(sbs...)
		c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
		must(t, err)
		err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-p"},
			SandboxID: "sb1", Reason: ports.ReasonSandboxChanged})
		if (tc.wantErr == nil) != (err == nil) || tc.wantErr != nil && !errors.Is(err, tc.wantErr) || (len(e.dels()) > 0) != tc.wantDel {
			t.Fatalf("%s: err %v, DELs %v", tc.name, err, e.dels())
		}
	}
}

// go doc Options: negative durations, a negative or NaN ReservationRate and a negative ReservationBurst are invalid;
// CacheDir and each plugin directory must exist.
func TestHoldsOptionsValidation(t *testing.T) {
	e := newEnv(t)
	for name, mod := range map[string]func(*cni.Options){
		"resync":  func(o *cni.Options) { o.ResyncInterval = -1 },
		"newest":  func(o *cni.Options) { o.NewestSandboxTimeout = -1 },
		"grace":   func(o *cni.Options) { o.ReservationGrace = -1 },
		"rate":    func(o *cni.Options) { o.ReservationRate = -1 },
		"nan":     func(o *cni.Options) { o.ReservationRate = rate.Limit(math.NaN()) },
		"burst":   func(o *cni.Options) { o.ReservationBurst = -1 },
		"cache":   func(o *cni.Options) { o.CacheDir = filepath.Join(e.root, "nope") },
		"plugins": func(o *cni.Options) { o.PluginDirs = []string{filepath.Join(e.root, "nope")} },
	} {
		o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
		mod(&o)
		if _, err := cni.New(o); !errors.Is(err, cni.ErrInvalidOptions) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// go doc WouldFree: "It returns none when the Collector is not a dry run, or before its first resync."
func TestHoldsWouldFreeNoneWhenNotDryRun(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.DryRun = true
	dry, err := cni.New(o)
	must(t, err)
	if len(dry.WouldFree()) != 0 {
		t.Fatal("before the first resync")
	}
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	if len(c.WouldFree()) != 0 || len(e.dels()) != 1 {
		t.Fatalf("WouldFree %v, DELs %v", c.WouldFree(), e.dels())
	}
}

type hangingRuntime struct{}

func (hangingRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	select {} // ignores its context
}

// go doc Options.Runtime: "Each list of its sandboxes is given 10s, or ResyncInterval if shorter: one that fails or
// takes longer keeps everything (a plain error, never permanent, whatever it says) and is asked again."
func TestHoldsHangingRuntimeKeeps(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	o := e.opts(hangingRuntime{}, (&logRec{}).logger())
	o.ResyncInterval = 50 * time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	start := time.Now()
	err = destroyGone(t, c, "uid-p", "sb1")
	if err == nil || ports.IsPermanent(err) || len(e.dels()) > 0 || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v, DELs %v, took %v", err, e.dels(), time.Since(start))
	}
}

// docs/sdk/cni-freeing.md:26-27 (rows 9, 10): a gone pod's sandbox that may be being created is refused
// (ErrSandboxRunning), then freed once refused for NewestSandboxTimeout.
func TestHoldsGonePodCreatingFreedAfterTimeout(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.presentNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.NewestSandboxTimeout = 30 * time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	if err := destroyGone(t, c, "uid-p", "sb1"); !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) > 0 {
		t.Fatalf("first: %v %v", err, e.dels())
	}
	time.Sleep(40 * time.Millisecond)
	if err := destroyGone(t, c, "uid-p", "sb1"); err != nil || len(e.dels()) != 1 {
		t.Fatalf("second: %v %v", err, e.dels())
	}
	if f := testcni.Address(t, c, "10.9.0.5").Freed; len(f) != 1 || f[0].Decision.Row != 10 {
		t.Fatalf("page %+v", f)
	}
}

// docs/sdk/cni-freeing.md:55 and go doc SandboxDead: dead when the runtime lists it stopped, or does not list it and its
// network namespace is gone; not when it lists it ready (listed both ready and stopped: ready), nor when its namespace
// is there.
func TestHoldsSandboxDead(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "gone", "eth0", e.goneNetNS("gone"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	e.writeEntry("net1", "there", "eth0", e.presentNetNS("there"), "uid-p", netConf("net1", "", false), "10.9.0.6")
	e.writeEntry("net1", "both", "eth0", e.goneNetNS("both"), "uid-p", netConf("net1", "", false), "10.9.0.7")
	rt := &testcni.Runtime{}
	rt.Set(sandbox("stopped", "uid-p", false, time.Now()), sandbox("both", "uid-p", false, time.Now()), sandbox("both", "uid-p", true, time.Now()))
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-p"}}
	for id, want := range map[string]bool{"gone": true, "there": false, "stopped": true, "both": false} {
		got, err := c.SandboxDead(context.Background(), pod, id)
		if err != nil || got != want {
			t.Fatalf("%s: %v %v", id, got, err)
		}
	}
}

// go doc DryRunDestroyPU: "answers as DestroyPU(ev) would, through the same decision (decide), and frees nothing".
func TestHoldsDryRunAnswersAsDestroyPU(t *testing.T) {
	for name, ns := range map[string]func(e *env) string{
		"dead": func(e *env) string { return e.goneNetNS("sb1") }, "creating": func(e *env) string { return e.presentNetNS("sb1") },
		"unknown": func(*env) string { return "" }} {
		for _, listed := range []bool{false, true} {
			e := newEnv(t)
			e.writeEntry("net1", "sb1", "eth0", ns(e), "uid-p", netConf("net1", "", false), "10.9.0.5")
			rt := &testcni.Runtime{}
			if listed {
				rt.Set(sandbox("sb1", "uid-p", true, time.Now()))
			}
			c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
			must(t, err)
			ev := ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-p"}, SandboxID: "sb1", Reason: ports.ReasonPodGone}
			dry := c.DryRunDestroyPU(context.Background(), ev)
			if len(e.dels()) > 0 {
				t.Fatalf("%s: dry run DELed", name)
			}
			real := c.DestroyPU(context.Background(), ev)
			if (dry == nil) != (real == nil) || dry != nil && !errors.Is(real, errors.Unwrap(dry)) && dry.Error() != real.Error() {
				t.Fatalf("%s listed %v: dry %v, real %v", name, listed, dry, real)
			}
		}
	}
}

// go doc DestroyPU: "An attachment gone already (the runtime's DEL came first, or a previous call) is nothing to do, so
// DestroyPU is idempotent; two calls for one pod at once free it once".
func TestHoldsDestroyPUIdempotent(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errs <- destroyGone(t, c, "uid-p", "sb1") }()
	}
	for i := 0; i < 2; i++ {
		must(t, <-errs)
	}
	must(t, destroyGone(t, c, "uid-p", "sb1"))
	if len(e.dels()) != 1 {
		t.Fatalf("DELs %v", e.dels())
	}
}
