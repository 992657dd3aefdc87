package contested_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// contestedSetup: pod P's old sandbox "sold" may be one the runtime is creating (not listed, its namespace there);
// the runtime lists "sx" as P's, ready, created after it; the cache holds sx's attachment as pod Q's, in an entry
// the collector does not use (how: qEntry).
func contestedSetup(t *testing.T, qEntry func(e *env, b string)) (*env, *cni.Collector) {
	e := newEnv(t)
	now := time.Now()
	e.writeEntry(t, entry{network: "net1", id: "sold", uid: "uid-p", ns: "ns", name: "p", ip: "10.1.0.5",
		netns: e.netnsPath(t, "sold", true), written: now.Add(-10 * time.Minute)})
	// Q's entry of sx, written where the collector reads it, then moved into place by qEntry.
	other := filepath.Join(e.root, "elsewhere")
	if err := os.MkdirAll(filepath.Join(other, "results"), 0o755); err != nil {
		t.Fatal(err)
	}
	oe := &env{cache: other}
	oe.writeEntry(t, entry{network: "net1", id: "sx", uid: "uid-q", ns: "ns", name: "q", ip: "10.1.0.7",
		netns: e.netnsPath(t, "sx", true), written: now.Add(-2 * time.Minute)})
	qEntry(e, filepath.Join(other, "results", "net1-sx-eth0"))
	rt := &fakeRuntime{}
	rt.set([]*runtimeapi.PodSandbox{sandbox("sx", "uid-p", true, now.Add(-time.Minute))}, nil)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	return e, c
}

var evOld = ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sold", Reason: ports.ReasonSandboxChanged}

// docs/sdk/cni-freeing.md 51-52: "A sandbox the cache holds as one pod's and the runtime lists as another's is never
// the later sandbox of row 6"; 39-40: a cache entry that is a link "is never used ..., but what it holds ... count[s]
// as any entry's". doc.go 207-209 says the same. Here the cache holds sx as Q's through a link (the runtime's libcni
// reads through it): sx is still taken as P's later sandbox, and P's old sandbox, which may be one the runtime is
// creating, is freed by row 6.
func TestAuditContestedSandboxIsNeverLater(t *testing.T) {
	e, c := contestedSetup(t, func(e *env, target string) {
		if err := os.Symlink(target, filepath.Join(e.cache, "results", "net1-sx-eth0")); err != nil {
			t.Fatal(err)
		}
	})
	err := c.DestroyPU(t.Context(), evOld)
	if n := e.delsOf("sold"); n != 0 || !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("DestroyPU = %v, and sold DELed %d times; want ErrNewestSandbox (row 7) and no DEL: sx is Q's in the cache, never the later sandbox of row 6", err, n)
	}
}

// The same, Q's entry of sx unusable for a DEL (its cached result does not load): the cache still holds it as Q's.
func TestAuditContestedSandboxIsNeverLaterUnusableEntry(t *testing.T) {
	e, c := contestedSetup(t, func(e *env, target string) {
		b, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		// The same entry, with a result no version loads.
		b = []byte(string(b[:len(b)-1]) + `,"result":{"cniVersion":"9.9.9"}}`)
		if err := os.WriteFile(filepath.Join(e.cache, "results", "net1-sx-eth0"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	err := c.DestroyPU(t.Context(), evOld)
	if n := e.delsOf("sold"); n != 0 || !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("DestroyPU = %v, and sold DELed %d times; want ErrNewestSandbox (row 7) and no DEL", err, n)
	}
}

// Control: Q's entry of sx a regular, usable entry: sx is contested, and P's old sandbox is refused (row 7).
func TestAuditHoldsContestedUsableEntry(t *testing.T) {
	e, c := contestedSetup(t, func(e *env, target string) {
		if err := os.Rename(target, filepath.Join(e.cache, "results", "net1-sx-eth0")); err != nil {
			t.Fatal(err)
		}
	})
	err := c.DestroyPU(t.Context(), evOld)
	if n := e.delsOf("sold"); n != 0 || !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("DestroyPU = %v, and sold DELed %d times; want ErrNewestSandbox and no DEL", err, n)
	}
}

// The same promise (cni-freeing.md 51-52), sx this time in the cache as P's too: the cache holds sx as Q's (a usable
// entry of Q on another network of the same container) and as P's, the runtime lists it as P's. A sandbox the cache
// holds as one pod's (Q's) and the runtime lists as another's (P's) is never the later sandbox of row 6; it is taken
// as P's later sandbox, and P's old sandbox, which may be one the runtime is creating, is freed.
func TestAuditContestedCachedSandboxIsNeverLater(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.writeEntry(t, entry{network: "net1", id: "sold", uid: "uid-p", ns: "ns", name: "p", netns: e.netnsPath(t, "sold", true), written: now.Add(-10 * time.Minute)})
	e.writeEntry(t, entry{network: "net1", id: "sx", uid: "uid-p", ns: "ns", name: "p", netns: e.netnsPath(t, "sx", true), written: now.Add(-2 * time.Minute)})
	e.writeEntry(t, entry{network: "net2", id: "sx", uid: "uid-q", ns: "ns", name: "q", netns: e.netnsPath(t, "sx", true), written: now.Add(-2 * time.Minute)})
	rt := &fakeRuntime{}
	rt.set([]*runtimeapi.PodSandbox{sandbox("sx", "uid-p", true, now.Add(-time.Minute))}, nil)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(t.Context(), evOld)
	if n := e.delsOf("sold"); n != 0 || !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("DestroyPU = %v, and sold DELed %d times; want ErrNewestSandbox (row 7) and no DEL", err, n)
	}
}

// Control for row 2: the same gone pod, the runtime listing srun ready by P's label: everything kept.
func TestAuditHoldsGonePodRunningLabelledKeepsAll(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.writeEntry(t, entry{network: "net1", id: "sdead", uid: "uid-p", ns: "ns", name: "p", netns: e.netnsPath(t, "sdead", false), written: now.Add(-time.Hour)})
	rt := &fakeRuntime{}
	rt.set([]*runtimeapi.PodSandbox{sandbox("srun", "uid-p", true, now.Add(-time.Minute))}, nil)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	ev := ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sdead", Reason: ports.ReasonPodGone}
	if err := c.DestroyPU(t.Context(), ev); !errors.Is(err, cni.ErrSandboxRunning) || e.delsOf("sdead") != 0 {
		t.Fatalf("DestroyPU = %v, dels %d", err, e.delsOf("sdead"))
	}
}

// docs/sdk/cni-freeing.md 153: "a gone pod the runtime runs keeps every sandbox"; 19 (row 2): "The pod is gone, and
// the runtime lists another of its sandboxes ready ... keep: the pod runs, whatever the API says"; 39-40: what a cache
// entry that is a link holds counts as any entry's; runtime.go's listRuntime: "A sandbox listed by its ID tells of
// that ID, whatever its labels say". Pod P is gone from the API; the cache holds P's sandbox "srun" through a link
// (the runtime's libcni reads through it), and the runtime lists srun ready, without labels: P runs in it. P's other,
// dead sandbox is freed all the same.
func TestAuditGonePodRunningInLinkedSandboxKeepsAll(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.writeEntry(t, entry{network: "net1", id: "sdead", uid: "uid-p", ns: "ns", name: "p", ip: "10.1.0.5",
		netns: e.netnsPath(t, "sdead", false), written: now.Add(-time.Hour)})
	linkedEntry(t, e, "srun", now.Add(-time.Minute))
	rt := &fakeRuntime{}
	rt.set([]*runtimeapi.PodSandbox{{Id: "srun", State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: now.Add(-time.Minute).UnixNano()}}, nil)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	ev := ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sdead", Reason: ports.ReasonPodGone}
	err = c.DestroyPU(t.Context(), ev)
	if n := e.delsOf("sdead"); n != 0 || !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU = %v, and sdead DELed %d times; want ErrSandboxRunning and nothing freed: the runtime runs P's sandbox srun", err, n)
	}
}

// Row 2's other half ("or may be creating one, as row 9"): pod P is gone from the API; the cache holds P's sandbox
// "screate" only through a link, the runtime does not list it, and its network namespace is there: the runtime may be
// creating it. P keeps every sandbox, its dead one included.
func TestGonePodCreatingInALinkedSandboxKeepsAll(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.writeEntry(t, entry{network: "net1", id: "sdead", uid: "uid-p", ns: "ns", name: "p", ip: "10.1.0.5",
		netns: e.netnsPath(t, "sdead", false), written: now.Add(-time.Hour)})
	linkedEntry(t, e, "screate", now.Add(-time.Second))
	rt := &fakeRuntime{}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	ev := ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sdead", Reason: ports.ReasonPodGone}
	err = c.DestroyPU(t.Context(), ev)
	if n := e.delsOf("sdead"); n != 0 || !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU = %v, and sdead DELed %d times; want ErrSandboxRunning and nothing freed: P's sandbox screate may be being created", err, n)
	}
}

// linkedEntry puts in e's cache, through a link to an entry written elsewhere, the entry of pod P's sandbox id in
// net1, written at written, its network namespace there: the collector reads it, and never DELs it.
func linkedEntry(t *testing.T, e *env, id string, written time.Time) {
	t.Helper()
	other := filepath.Join(e.root, "elsewhere")
	if err := os.MkdirAll(filepath.Join(other, "results"), 0o755); err != nil {
		t.Fatal(err)
	}
	(&env{cache: other}).writeEntry(t, entry{network: "net1", id: id, uid: "uid-p", ns: "ns", name: "p", ip: "10.1.0.6",
		netns: e.netnsPath(t, id, true), written: written})
	if err := os.Symlink(filepath.Join(other, "results", "net1-"+id+"-eth0"), filepath.Join(e.cache, "results", "net1-"+id+"-eth0")); err != nil {
		t.Fatal(err)
	}
}

// Row 10 for a sandbox only an entry not used names: pod P is gone; its sandbox "sdead" is dead; its sandbox
// "screate", named P's only through a link, is not listed and its network namespace is there (row 9). Refused for
// NewestSandboxTimeout, it is freed with its gone pod (row 10: nothing to DEL of a link), and P's dead sandbox with it:
// its refusals are timed like a cached sandbox's, and kept across reads of the cache.
func TestGonePodCreatingInALinkedSandboxIsFreedAfterNewestSandboxTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		now := time.Now()
		e.writeEntry(t, entry{network: "net1", id: "sdead", uid: "uid-p", ns: "ns", name: "p", ip: "10.1.0.5",
			netns: e.netnsPath(t, "sdead", false), written: now.Add(-time.Hour)})
		linkedEntry(t, e, "screate", now.Add(-time.Second))
		o := e.opts(&fakeRuntime{})
		o.NewestSandboxTimeout = time.Minute
		c, err := cni.New(o)
		if err != nil {
			t.Fatal(err)
		}
		ev := ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sdead", Reason: ports.ReasonPodGone}
		if err := c.DestroyPU(t.Context(), ev); !errors.Is(err, cni.ErrSandboxRunning) || e.delsOf("sdead") != 0 {
			t.Fatalf("first DestroyPU = %v, and sdead DELed %d times; want ErrSandboxRunning (row 9 of screate)", err, e.delsOf("sdead"))
		}
		for range 4 { // refused again, as the engine's backoff would ask, past NewestSandboxTimeout
			time.Sleep(20 * time.Second)
			err = c.DestroyPU(t.Context(), ev)
		}
		// The link itself is never touched: an entry of the pod that cannot be used gives the PU up (ErrUnusableEntry).
		if errors.Is(err, cni.ErrSandboxRunning) || err != nil && !errors.Is(err, cni.ErrUnusableEntry) || e.delsOf("sdead") != 1 {
			t.Fatalf("DestroyPU 80s on = %v, and sdead DELed %d times; want sdead freed once (rows 10 and 4)", err, e.delsOf("sdead"))
		}
	})
}

// ports.PolicyHandler: destroying a PU the policy engine does not know must succeed, or answer Permanent. The cache
// holds nothing of the PU, and a config of ConfDir is being written (cut before its name): there is nothing to keep,
// and DestroyPU and DryRunDestroyPU answer nil, whatever the event.
func TestUnknownPUIsNothingToDoWhileAConfigIsBeingWritten(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(t, entry{network: "net1", id: "sother", uid: "uid-q", ns: "ns", name: "q", netns: e.netnsPath(t, "sother", true), written: time.Now().Add(-time.Hour)})
	if err := os.WriteFile(filepath.Join(e.conf, "10-other.conflist"), []byte(`{"cniVersion":"1.0.0",`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cni.New(e.opts(&fakeRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	pod := types.NamespacedName{Namespace: "ns", Name: "never"}
	for _, ev := range []ports.DestroyEvent{
		{PUID: "uid-never", Pod: pod, Reason: ports.ReasonPodGone},
		{PUID: "uid-never", Pod: pod, SandboxID: "snever", Reason: ports.ReasonPodGone},
		{PUID: "uid-never", Pod: pod, SandboxID: "snever", Reason: ports.ReasonSandboxChanged},
	} {
		if err := c.DestroyPU(t.Context(), ev); err != nil {
			t.Errorf("DestroyPU(%s, sandbox %q) of a PU the cache holds nothing of = %v, want nil", ev.Reason, ev.SandboxID, err)
		}
		if err := c.DryRunDestroyPU(t.Context(), ev); err != nil {
			t.Errorf("DryRunDestroyPU(%s, sandbox %q) of a PU the cache holds nothing of = %v, want nil", ev.Reason, ev.SandboxID, err)
		}
	}
}
