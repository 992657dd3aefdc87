package remembers_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// ErrOrderUnknown (go doc): "this Collector no longer lists that sandbox (ListPUs skips it, logged once) until the
// Collector is made anew". A given-up sandbox whose cache entry is read once while libcni rewrites it in place (cut
// short, which the doc names as a state an entry is read in) must stay given up once it is whole again.
func TestAuditGiveUpSurvivesEntryCutShort(t *testing.T) {
	e := newEnv(t)
	e.fakePlugin(t, "fake")
	conf := conflist("net1", "fake")
	const uid, x = "uid-1", "sandboxX"
	e.writeEntry(t, "net1", x, "eth0", uid, conf, time.Now().Add(-time.Hour))
	whole, err := os.ReadFile(e.entryPath("net1", x, "eth0"))
	if err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data,
		NewestSandboxTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	ev := ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod"}, SandboxID: x, Reason: ports.ReasonSandboxChanged}
	if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("first DestroyPU: %v, want ErrNewestSandbox", err)
	}
	time.Sleep(40 * time.Millisecond)
	if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrOrderUnknown) {
		t.Fatalf("DestroyPU after NewestSandboxTimeout: %v, want ErrOrderUnknown", err)
	}
	pus, err := c.ListPUs(ctx)
	if err != nil || len(pus) != 1 || pus[0].SandboxID != "" {
		t.Fatalf("ListPUs after the give-up: %+v, %v; want the pod's PU without a sandbox", pus, err)
	}
	// libcni rewrites the entry in place: a read sees it cut short.
	if err := os.WriteFile(e.entryPath("net1", x, "eth0"), whole[:40], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPUs(ctx); err != nil {
		t.Fatalf("ListPUs while the entry is cut: %v", err)
	}
	if err := os.WriteFile(e.entryPath("net1", x, "eth0"), whole, 0o600); err != nil {
		t.Fatal(err)
	}
	pus, err = c.ListPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pus) != 1 || pus[0].SandboxID != "" {
		t.Errorf("ListPUs once the entry is whole again lists %+v: the sandbox given up on (ErrOrderUnknown) is listed again, before the Collector is made anew", pus)
	}
	if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrOrderUnknown) {
		t.Errorf("DestroyPU of the sandbox given up on, once its entry is whole again: %v; want ErrOrderUnknown (left alone until the Collector is made anew)", err)
	}
}

// AttachmentStatus.Decision (go doc): "the last decision the Collector took on its sandbox when the engine asked it
// to free it ... nil: it was never asked to, since the Collector started". A decision on a sandbox the cache still
// holds must not be forgotten because one read saw its entry cut short while libcni rewrote it in place.
func TestAuditAddressPageDecisionSurvivesEntryCutShort(t *testing.T) {
	e := newEnv(t)
	e.fakePlugin(t, "fake")
	conf := conflist("net1", "fake")
	const uid, x = "uid-1", "sandboxX"
	e.writeEntry(t, "net1", x, "eth0", uid, conf, time.Now().Add(-time.Hour))
	whole, err := os.ReadFile(e.entryPath("net1", x, "eth0"))
	if err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data})
	ctx := context.Background()
	ev := ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod"}, SandboxID: x, Reason: ports.ReasonSandboxChanged}
	if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("DestroyPU: %v, want ErrNewestSandbox", err)
	}
	decision := func() *cni.FreeDecision {
		for _, a := range testcni.Address(t, c, "10.99.0.5").Attachments {
			if a.ContainerID == x {
				return a.Decision
			}
		}
		t.Fatal("the attachment is not on the address page")
		return nil
	}
	if d := decision(); d == nil || d.Row != 7 {
		t.Fatalf("decision before: %+v, want row 7", d)
	}
	if err := os.WriteFile(e.entryPath("net1", x, "eth0"), whole[:40], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPUs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.entryPath("net1", x, "eth0"), whole, 0o600); err != nil {
		t.Fatal(err)
	}
	if d := decision(); d == nil || d.Row != 7 {
		t.Errorf("address page once the entry is whole again: decision %+v; want the DestroyPU's (row 7): it was asked, and the cache held the sandbox all along", d)
	}
}

// Options.NewestSandboxTimeout (go doc): "how long DestroyPU refuses to free a sandbox that may be one the runtime is
// creating, timed from the first refusal since its place was last known: then a sandbox of a live pod is given up
// (ErrOrderUnknown)". One read of the sandbox's entry cut short (libcni writing it in place) tells nothing of its
// place, yet the refusals are timed anew from it.
func TestAuditRefusalTimeSurvivesEntryCutShort(t *testing.T) {
	e := newEnv(t)
	e.fakePlugin(t, "fake")
	conf := conflist("net1", "fake")
	const uid, x = "uid-1", "sandboxX"
	e.writeEntry(t, "net1", x, "eth0", uid, conf, time.Now().Add(-time.Hour))
	whole, err := os.ReadFile(e.entryPath("net1", x, "eth0"))
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data,
		NewestSandboxTimeout: timeout})
	ctx := context.Background()
	ev := ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod"}, SandboxID: x, Reason: ports.ReasonSandboxChanged}
	first := time.Now()
	if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("first DestroyPU: %v, want ErrNewestSandbox", err)
	}
	time.Sleep(timeout / 2)
	if err := os.WriteFile(e.entryPath("net1", x, "eth0"), whole[:40], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPUs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.entryPath("net1", x, "eth0"), whole, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("DestroyPU before the timeout: %v, want ErrNewestSandbox", err)
	}
	time.Sleep(time.Until(first.Add(timeout + 50*time.Millisecond)))
	if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrOrderUnknown) {
		t.Errorf("DestroyPU %v after the first refusal (NewestSandboxTimeout %v): %v; want ErrOrderUnknown", time.Since(first).Round(time.Millisecond), timeout, err)
	}
}
