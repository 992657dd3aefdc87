package freeing_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

var ctx = context.Background()

// Sanity of the harness, and row 3: a gone pod's sandbox the runtime lists
// stopped is freed, its entry removed by libcni.
func TestStoppedSandboxFreed(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsPresent("ns-aaa")})
	c := n.collector(static(sb("aaa", "u1", notReady, time.Now())))
	if err := c.DestroyPU(ctx, gone("u1")); err != nil {
		t.Fatal(err)
	}
	if d := n.dels(); len(d) != 1 || len(n.entries()) != 0 {
		t.Fatalf("DELs %v, entries left %v", d, n.entries())
	}
}

// doc.go:89-90 "A sandbox listed both ready and stopped is ready."; doc.go:86-88,
// cni-freeing.md:19 (row 2) and :38 "a gone pod the runtime runs keeps every sandbox".
// The runtime lists the pod's current sandbox twice: stopped with the
// kubelet's labels, and ready in an answer that carries no labels or
// metadata. The collector keeps one of the two answers and reads the pod's
// UID from it alone.
func TestReadyListedTwiceKeepsPod(t *testing.T) {
	for _, order := range []string{"stopped-first", "ready-first"} {
		t.Run(order, func(t *testing.T) {
			n := newNode(t)
			// the pod's old sandbox: stopped, leaked
			n.write(att{Network: "net", Sandbox: "old", UID: "u1", NetNS: n.nsGone("ns-old"), Written: time.Now().Add(-time.Hour)})
			stopped := sb("cur", "u1", notReady, time.Now())
			bare := &runtimeapi.PodSandbox{Id: "cur", State: ready, CreatedAt: time.Now().UnixNano()}
			list := []*runtimeapi.PodSandbox{stopped, bare}
			if order == "ready-first" {
				list = []*runtimeapi.PodSandbox{bare, stopped}
			}
			c := n.collector(static(append(list, sb("old", "u1", notReady, time.Now().Add(-time.Hour)))...))
			err := c.DestroyPU(ctx, gone("u1"))
			if !errors.Is(err, cni.ErrSandboxRunning) || len(n.dels()) != 0 {
				t.Fatalf("the runtime lists sandbox cur of pod u1 ready (and stopped): want ErrSandboxRunning and no DEL; got %v, DELs %v", err, n.dels())
			}
		})
	}
}

// collector.go:346-348 "An attachment gone already (the runtime's DEL came
// first, or a previous call) is nothing to do". The runtime's own DEL
// completes (libcni removes the entry) after the collector read the cache
// and before it DELs: the collector's DEL still runs the plugins.
func TestGoneAlreadyIsNothingToDo(t *testing.T) {
	n := newNode(t)
	p := n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
	rt := &fakeRuntime{list: func(int) ([]*runtimeapi.PodSandbox, error) {
		// the runtime's teardown finishes: its DEL succeeded, libcni removed the entry
		if err := os.Remove(p); err != nil {
			t.Error(err)
		}
		return nil, nil
	}}
	c := n.collector(rt)
	if err := c.DestroyPU(ctx, gone("u1")); err != nil {
		t.Fatal(err)
	}
	if d := n.dels(); len(d) != 0 {
		t.Fatalf("the attachment was gone already when the collector DELed: want no DEL, got %v", d)
	}
}

// Collector doc "its methods are safe from any goroutine"; collector.go:346-348
// (a previous call's attachment is nothing to do). Two DestroyPU of the
// same gone pod at once: each attachment is freed once.
func TestConcurrentDestroyFreesOnce(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
	if err := os.WriteFile(filepath.Join(n.base(), "slow"), []byte("0.3"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Both calls have read the cache before either lists the runtime, unless the second waits for the first
	// (then the first goes on alone after a second).
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	c := n.collector(&fakeRuntime{list: func(int) ([]*runtimeapi.PodSandbox, error) {
		arrived.Done()
		select {
		case <-both:
		case <-time.After(time.Second):
		}
		return nil, nil
	}})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.DestroyPU(ctx, gone("u1")) }()
	}
	wg.Wait()
	if d := n.dels(); len(d) != 1 {
		t.Fatalf("one attachment, two DestroyPU at once: want 1 DEL, got %v (errors %v)", d, errs)
	}
}

// doc.go:131-132 "It never touches a network whose cached config, or whose
// config in Options.ConfDir, says "disableGC": true." A single plugin's .conf
// in ConfDir says "disableGC": "True"/"TRUE"/"tRuE", which libcni reads true
// (it lower-cases the string).
func TestDisableGCStringInConfDir(t *testing.T) {
	for _, v := range []string{`"tRuE"`, `"truE"`} {
		t.Run(v, func(t *testing.T) {
			n := newNode(t)
			conf := `{"cniVersion":"1.0.0","name":"net","type":"fake","disableGC":` + v + `}`
			if err := os.WriteFile(filepath.Join(n.conf, "10-net.conf"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
			c := n.collector(static())
			_ = c.DestroyPU(ctx, gone("u1"))
			if d := n.dels(); len(d) != 0 {
				t.Fatalf("ConfDir's config of net says disableGC %s: want no DEL, got %v", v, d)
			}
		})
	}
}

// cni-freeing.md:27 (row 10) "The same, refused for NewestSandboxTimeout |
// free: no sandbox is created for so long"; :31-32 "A refusal is timed from
// the first since the sandbox's place was last known (listed ready, or
// dead)"; :22/doc.go:93-95 a sandbox is dead only when "one of its
// attachments names a path that is gone, and none names one that is there".
// The sandbox of a gone pod has two attachments that disagree: the one of a
// collectable network names a namespace path that is gone, the one of a
// disableGC network one that is there. The table reads it "may be
// creating" (row 9). ListPUs (Resync, every ResyncInterval) reads only the
// collectable attachment, calls it dead, and forgets the refusal's time:
// the sandbox is refused for ever, and its attachment never freed.
func TestRefusalTimerSurvivesListPUs(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
	n.write(att{Network: "keep", Sandbox: "aaa", UID: "u1", NetNS: n.nsPresent("ns-aaa-keep"),
		Config: conflist("keep", `,"disableGC":true`)})
	const timeout = 200 * time.Millisecond
	c := n.collector(static(), func(o *cni.Options) { o.NewestSandboxTimeout = timeout })
	first := time.Now()
	var err error
	for time.Since(first) < 5*timeout {
		if _, lerr := c.ListPUs(ctx); lerr != nil { // Resync's list
			t.Fatal(lerr)
		}
		err = c.DestroyPU(ctx, gone("u1"))
		if len(n.dels()) > 0 {
			break
		}
		time.Sleep(timeout / 4)
	}
	if d := n.dels(); len(d) != 1 || d[0] != "aaa eth0" {
		t.Fatalf("refused since %v ago (NewestSandboxTimeout %v): want net's attachment freed (row 10); got DELs %v, last error %v",
			time.Since(first).Round(time.Millisecond), timeout, d, err)
	}
}

// Control: without ListPUs between the refusals, row 10 frees it.
func TestRefusalTimeoutFreesGonePod(t *testing.T) {
	n := newNode(t)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa")})
	n.write(att{Network: "keep", Sandbox: "aaa", UID: "u1", NetNS: n.nsPresent("ns-aaa-keep"),
		Config: conflist("keep", `,"disableGC":true`)})
	const timeout = 200 * time.Millisecond
	c := n.collector(static(), func(o *cni.Options) { o.NewestSandboxTimeout = timeout })
	if err := c.DestroyPU(ctx, gone("u1")); !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("first: want ErrSandboxRunning (row 9), got %v", err)
	}
	time.Sleep(timeout + 50*time.Millisecond)
	if err := c.DestroyPU(ctx, gone("u1")); err != nil {
		t.Fatal(err)
	}
	if d := n.dels(); len(d) != 1 || d[0] != "aaa eth0" {
		t.Fatalf("want net's attachment freed once, keep's never; got %v", d)
	}
}

// doc.go:110-112 "A pod's sandboxes are listed (ListPUs) in the same light:
// dead first, then those nothing is told of, then those that may be being
// created, the ready one last"; cni-freeing.md:32-33 "The same verdicts
// order a pod's sandboxes for ListPUs". Sandbox aaa has a collectable
// attachment whose namespace path is gone and a disableGC one whose path is
// there (the table: may be being created); sandbox bbb's path tells nothing.
// The table orders bbb first; ListPUs reads aaa's collectable attachment
// only, calls it dead, and lists aaa.
func TestListPUsOrderAsTable(t *testing.T) {
	n := newNode(t)
	old := time.Now().Add(-time.Hour)
	n.write(att{Network: "net", Sandbox: "aaa", UID: "u1", NetNS: n.nsGone("ns-aaa"), Written: old})
	n.write(att{Network: "keep", Sandbox: "aaa", UID: "u1", NetNS: n.nsPresent("ns-aaa-keep"), Written: old,
		Config: conflist("keep", `,"disableGC":true`)})
	n.write(att{Network: "net", Sandbox: "bbb", UID: "u1", NetNS: "", Written: old.Add(time.Minute)})
	c := n.collector(static())
	pus, err := c.ListPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dead, _ := c.SandboxDead(ctx, pod("u1"), "aaa"); dead {
		t.Fatalf("SandboxDead says aaa is dead")
	}
	if len(pus) != 1 || pus[0].SandboxID != "bbb" {
		t.Fatalf("want the PU of u1 on bbb (nothing told) before aaa (may be being created, SandboxDead false); got %+v", pus)
	}
}
