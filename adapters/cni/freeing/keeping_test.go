package freeing_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:18 row 1, :38; doc.go:86-90: a static pod whose mirror pod
// is missing (the API says gone), its sandbox listed ready, and an odd
// state listed beside: nothing freed.
func TestReadySandboxNeverFreed(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "cur", UID: "u1", NetNS: n.nsGone("ns-cur")})
	n.write(att{Network: "net", Sandbox: "old", UID: "u1", NetNS: n.nsGone("ns-old"), Written: time.Now().Add(-time.Hour)})
	odd := sb("cur", "u1", runtimeapi.PodSandboxState(7), time.Now())
	for _, rt := range []*fakeRuntime{
		static(sb("cur", "u1", notReady, time.Now()), sb("cur", "", ready, time.Now())),
		static(odd),
		static(sb("cur", "other-uid", ready, time.Now())),
	} {
		c := n.collector(rt)
		if err := c.DestroyPU(ctx, gone("u1")); !errors.Is(err, cni.ErrSandboxRunning) {
			t.Fatalf("want ErrSandboxRunning, got %v", err)
		}
		if err := c.DestroyPU(ctx, changed("u1", "cur")); !errors.Is(err, cni.ErrNewestSandbox) {
			t.Fatalf("want ErrNewestSandbox, got %v", err)
		}
		if dead, err := c.SandboxDead(ctx, pod("u1"), "cur"); dead || err != nil {
			t.Fatalf("SandboxDead %v %v", dead, err)
		}
	}
	if d := n.dels(); len(d) != 0 {
		t.Fatalf("DELs %v", d)
	}
}

// Options.Runtime / cni-freeing.md:22 row 5: without a runtime a sandbox
// whose namespace is there is kept (ErrNoEvidence), one whose namespace is
// gone freed.
func TestNoRuntimeNoEvidence(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsPresent("ns-aaa")})
	n.write(att{Network: "net", Sandbox: "bbb", UID: "u1", NetNS: n.nsGone("ns-bbb")})
	n.write(att{Network: "net", Sandbox: "ccc", UID: "u1", NetNS: ""})
	c := n.collector(nil)
	if err := c.DestroyPU(ctx, gone("u1")); !errors.Is(err, cni.ErrNoEvidence) {
		t.Fatalf("want ErrNoEvidence, got %v", err)
	}
	if d := n.dels(); len(d) != 1 || d[0] != "bbb eth0" {
		t.Fatalf("DELs %v", d)
	}
}

// DestroyPU doc: "A Runtime that cannot be asked keeps everything (a plain
// error)" — failing, or hanging until the call's deadline.
func TestRuntimeFailingOrHangingKeeps(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
	c := n.collector(&fakeRuntime{list: func(int) ([]*runtimeapi.PodSandbox, error) { return nil, errors.New("unavailable") }})
	if err := c.DestroyPU(ctx, gone("u1")); err == nil || ports.IsPermanent(err) {
		t.Fatalf("want a plain error, got %v", err)
	}
	hang := make(chan struct{})
	defer close(hang)
	c = n.collector(hangRuntime{hang})
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := c.DestroyPU(cctx, gone("u1")); err == nil {
		t.Fatal("want an error")
	}
	if d := n.dels(); len(d) != 0 {
		t.Fatalf("DELs %v", d)
	}
}

type hangRuntime struct{ c chan struct{} }

func (h hangRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.c:
		return nil, nil
	}
}

// collector.go:349-350 "A DEL that fails keeps its entry and makes a plain
// error ... the other attachments are DELed meanwhile"; a DEL that hangs
// past the call's deadline likewise; a retry frees it once.
func TestDelFailingKeepsEntry(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
	n.write(att{Network: "net2", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
	fail := filepath.Join(n.base(), "fail")
	os.WriteFile(fail, nil, 0o600)
	c := n.collector(static())
	if err := c.DestroyPU(ctx, gone("u1")); err == nil || ports.IsPermanent(err) {
		t.Fatalf("want a plain error, got %v", err)
	}
	if len(n.entries()) != 2 || len(n.dels()) != 2 {
		t.Fatalf("entries %v, DELs %v", n.entries(), n.dels())
	}
	os.Remove(fail)
	os.WriteFile(filepath.Join(n.base(), "slow"), []byte("1"), 0o600)
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := c.DestroyPU(cctx, gone("u1")); err == nil {
		t.Fatal("DEL hung past the deadline: want an error")
	}
	if len(n.entries()) != 2 {
		t.Fatalf("entries %v", n.entries())
	}
	os.Remove(filepath.Join(n.base(), "slow"))
	if err := c.DestroyPU(ctx, gone("u1")); err != nil {
		t.Fatal(err)
	}
	if len(n.entries()) != 0 {
		t.Fatalf("entries %v", n.entries())
	}
}

// doc.go:131-132: disableGC in the cached config (list, or single plugin
// config), or in ConfDir (conflist, single .conf with true or "true").
func TestDisableGCNeverDELed(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "a", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x"), Config: conflist("a", `,"disableGC":true`)})
	n.write(att{Network: "b", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x"), Config: `{"cniVersion":"1.0.0","name":"b","type":"fake","disableGC":true}`})
	n.write(att{Network: "c", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x"), Config: `{"cniVersion":"1.0.0","name":"c","plugins":[{"type":"fake","disableGC":true}]}`})
	n.write(att{Network: "d", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x")})
	n.write(att{Network: "e", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x")})
	n.write(att{Network: "f", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x")})
	os.WriteFile(filepath.Join(n.conf, "d.conflist"), []byte(conflist("d", `,"disableGC":"true"`)), 0o600)
	os.WriteFile(filepath.Join(n.conf, "e.conf"), []byte(`{"cniVersion":"1.0.0","name":"e","type":"fake","disableGC":true}`), 0o600)
	os.WriteFile(filepath.Join(n.conf, "f.json"), []byte(`{"cniVersion":"1.0.0","name":"f","type":"fake","disableGC":"TRUE"}`), 0o600)
	n.write(att{Network: "g", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x")})
	c := n.collector(static())
	if err := c.DestroyPU(ctx, gone("u1")); err != nil {
		t.Fatal(err)
	}
	if d := n.dels(); len(d) != 1 {
		t.Fatalf("want only g DELed, got %v (entries left %v)", d, n.entries())
	}
}

// DestroyPU doc / doc.go:136-143: an entry whose cached result cannot be
// loaded, one whose file name is not libcni's, and one without the pod's
// arguments are never DELed nor removed; the first two make ErrUnusableEntry,
// permanent once the rest is freed; a single plugin's config is DELed.
func TestUnusableEntriesKept(t *testing.T) {
	n := newNode(t)
	p := n.write(att{Network: "bad", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x")})
	b, _ := os.ReadFile(p)
	b = []byte(string(b[:len(b)-1]) + `,"result":{"cniVersion":"1.0.0","ips":[{"address":"not-an-ip"}]}}`)
	os.WriteFile(p, b, 0o600)
	n.write(att{Network: "my-net", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x"), FileName: "my-net-s1-eth1"})
	n.write(att{Network: "single", Sandbox: "s1", UID: "u1", NetNS: n.nsGone("x"), Config: `{"cniVersion":"1.0.0","name":"single","type":"fake"}`})
	c := n.collector(static())
	err := c.DestroyPU(ctx, gone("u1"))
	if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
		t.Fatalf("want permanent ErrUnusableEntry, got %v", err)
	}
	if d := n.dels(); len(d) != 1 {
		t.Fatalf("want only single DELed, got %v", d)
	}
	if e := n.entries(); len(e) != 2 {
		t.Fatalf("entries %v", e)
	}
}

// cni-freeing.md:24-25 rows 7-8, ErrOrderUnknown doc: a sandbox change
// refused for NewestSandboxTimeout is given up (permanent), passed over by
// ListPUs, and freed with its gone pod (row 10).
func TestGiveUpThenGonePod(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsPresent("ns-aaa")})
	const timeout = 150 * time.Millisecond
	c := n.collector(static(), func(o *cni.Options) { o.NewestSandboxTimeout = timeout })
	if err := c.DestroyPU(ctx, changed("u1", "aaa")); !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("want ErrNewestSandbox, got %v", err)
	}
	time.Sleep(timeout + 50*time.Millisecond)
	if err := c.DestroyPU(ctx, changed("u1", "aaa")); !errors.Is(err, cni.ErrOrderUnknown) || !ports.IsPermanent(err) {
		t.Fatalf("want permanent ErrOrderUnknown, got %v", err)
	}
	pus, _ := c.ListPUs(ctx)
	if len(pus) != 1 || pus[0].SandboxID != "" {
		t.Fatalf("pus %+v", pus)
	}
	if len(n.dels()) != 0 {
		t.Fatalf("DELs %v", n.dels())
	}
	if err := c.DestroyPU(ctx, gone("u1")); err != nil {
		t.Fatal(err)
	}
	if len(n.dels()) != 1 {
		t.Fatalf("DELs %v", n.dels())
	}
}

// cni-freeing.md:19 row 2, row 9: a gone pod whose new sandbox the runtime
// may be creating (cached, namespace there, not listed) keeps its old,
// stopped one.
func TestGonePodBeingCreatedKeepsAll(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "old", UID: "u1", NetNS: n.nsGone("ns-old"), Written: time.Now().Add(-time.Hour)})
	n.write(att{Network: "net", Sandbox: "new", UID: "u1", NetNS: n.nsPresent("ns-new")})
	c := n.collector(static(sb("old", "u1", notReady, time.Now().Add(-time.Hour))))
	if err := c.DestroyPU(ctx, gone("u1")); !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("want ErrSandboxRunning, got %v", err)
	}
	if len(n.dels()) != 0 {
		t.Fatalf("DELs %v", n.dels())
	}
}

// doc.go:119-127: the cached namespace path is passed to the DEL only when
// it is a bind-mounted nsfs outside /proc and not a link; doc.go:133: the GC
// verb is never called.
func TestNetNSPassedOnlyWhenPinned(t *testing.T) {
	n := newNode(t)
	pin := n.nsPresent("pinned")
	// a bind mount in this test's private mount namespace, of its private network namespace
	if err := unix.Mount("/proc/self/ns/net", pin, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(pin, unix.MNT_DETACH)
	link := filepath.Join(n.netns, "link")
	if err := os.Symlink("/proc/self/ns/net", link); err != nil {
		t.Fatal(err)
	}
	n.write(att{Network: "a", Sandbox: "s1", UID: "u1", NetNS: pin})
	n.write(att{Network: "b", Sandbox: "s2", UID: "u1", NetNS: link})
	n.write(att{Network: "c", Sandbox: "s3", UID: "u1", NetNS: n.nsPresent("plainfile")})
	n.write(att{Network: "d", Sandbox: "s4", UID: "u1", NetNS: "/proc/1/ns/net"})
	c := n.collector(static(sb("s1", "u1", notReady, time.Now()), sb("s2", "u1", notReady, time.Now()),
		sb("s3", "u1", notReady, time.Now()), sb("s4", "u1", notReady, time.Now())))
	if err := c.DestroyPU(ctx, gone("u1")); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"DEL s1 eth0 netns=" + pin: true, "DEL s2 eth0 netns=": true, "DEL s3 eth0 netns=": true, "DEL s4 eth0 netns=": true}
	got := n.full()
	if len(got) != 4 {
		t.Fatalf("calls %v", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("unexpected call %q (all: %v)", g, got)
		}
	}
}

type fakeTracker struct {
	mu       sync.Mutex
	tracked  []ports.PU
	untrack  []string
	triggers []types.NamespacedName
	got      chan struct{}
}

func (f *fakeTracker) Track(pu ports.PU) error {
	f.mu.Lock()
	f.tracked = append(f.tracked, pu)
	f.mu.Unlock()
	return nil
}
func (f *fakeTracker) Untrack(puid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.untrack = append(f.untrack, puid)
	return true
}
func (f *fakeTracker) TriggerPod(p types.NamespacedName) {
	f.mu.Lock()
	f.triggers = append(f.triggers, p)
	f.mu.Unlock()
	select {
	case f.got <- struct{}{}:
	default:
	}
}

// doc.go:40-44 / Requeue doc: once an old sandbox is freed, Requeue has a
// running Resync list at once, track the pod's next sandbox and trigger it.
func TestRequeueTracksNextSandbox(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("a"), Written: time.Now().Add(-time.Hour)})
	n.write(att{Network: "net", Sandbox: "bbb", UID: "u1", NetNS: n.nsPresent("b")})
	c := n.collector(static(sb("aaa", "u1", notReady, time.Now().Add(-time.Hour)), sb("bbb", "u1", ready, time.Now())),
		func(o *cni.Options) { o.ResyncInterval = time.Hour })
	pus, err := c.ListPUs(ctx)
	if err != nil || len(pus) != 1 || pus[0].SandboxID != "aaa" {
		t.Fatalf("ListPUs %+v %v", pus, err)
	}
	tr := &fakeTracker{got: make(chan struct{}, 1)}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- c.Resync(rctx, tr) }()
	// The Inventory listed a dead sandbox (aaa): Resync's first list runs at once and triggers its pod.
	select {
	case <-tr.got:
	case <-time.After(5 * time.Second):
		t.Fatal("no first list at once")
	}
	if err := c.DestroyPU(ctx, changed("u1", "aaa")); err != nil {
		t.Fatal(err)
	}
	if err := c.Requeue(ctx, pod("u1")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.got:
	case <-time.After(5 * time.Second):
		t.Fatal("no trigger after Requeue")
	}
	cancel()
	<-done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.tracked) != 2 || tr.tracked[0].SandboxID != "aaa" || tr.tracked[1].SandboxID != "bbb" || len(n.dels()) != 1 {
		t.Fatalf("tracked %+v, DELs %v", tr.tracked, n.dels())
	}
}
