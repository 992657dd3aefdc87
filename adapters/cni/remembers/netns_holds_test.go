package remembers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md rows 4 and 5: without a runtime, a sandbox whose namespace is gone (from a directory that is there)
// is freed, and the others of the gone pod are kept with ErrNoEvidence. SandboxDead answers row 4's "dead".
func TestAuditHoldsNoRuntimeFreesOnlyGoneNamespace(t *testing.T) {
	e := newEnv(t)
	log := e.fakePlugin(t, "fake")
	conf := conflist("net1", "fake")
	nsDir := filepath.Join(t.TempDir(), "netns")
	if err := os.MkdirAll(nsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	present := filepath.Join(nsDir, "present")
	if err := os.WriteFile(present, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(cid, netns string) {
		p := e.entryPath("net1", cid, "eth0")
		if err := os.WriteFile(p, entryBytes(t, "net1", cid, "eth0", "uid-1", "ns", "pod", netns, conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("sbGone", filepath.Join(nsDir, "gone"))
	write("sbThere", present)
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data})
	pod := podOf("uid-1")
	if dead, err := c.SandboxDead(context.Background(), pod, "sbGone"); err != nil || !dead {
		t.Fatalf("SandboxDead(sbGone) = %v, %v", dead, err)
	}
	if dead, err := c.SandboxDead(context.Background(), pod, "sbThere"); err != nil || dead {
		t.Fatalf("SandboxDead(sbThere) = %v, %v", dead, err)
	}
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod"},
		SandboxID: "sbGone", Reason: ports.ReasonPodGone})
	if !errors.Is(err, cni.ErrNoEvidence) {
		t.Fatalf("DestroyPU: %v, want ErrNoEvidence", err)
	}
	if testcni.Exists(e.entryPath("net1", "sbGone", "eth0")) || !testcni.Exists(e.entryPath("net1", "sbThere", "eth0")) {
		t.Fatalf("gone-namespace sandbox freed: %v; other kept: %v", !testcni.Exists(e.entryPath("net1", "sbGone", "eth0")), testcni.Exists(e.entryPath("net1", "sbThere", "eth0")))
	}
	b, _ := os.ReadFile(log)
	if string(b) != "DEL sbGone eth0\n" {
		t.Fatalf("plugin calls: %q", b)
	}
	_ = time.Now
}

// cni-freeing.md: a running sandbox listed without an ID "that names no pod either makes the runtime's answer a
// failure (nothing is decided on it)": DestroyPU keeps everything, SandboxDead fails, reservations take row 14.
func TestAuditHoldsRunningSandboxWithNoIDNorPodIsAFailure(t *testing.T) {
	e := newEnv(t)
	log := e.fakePlugin(t, "fake")
	conf := conflist("net1", "fake")
	nsDir := filepath.Join(t.TempDir(), "netns")
	if err := os.MkdirAll(nsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.entryPath("net1", "sbX", "eth0"), entryBytes(t, "net1", "sbX", "eth0", "uid-1", "ns", "pod", filepath.Join(nsDir, "gone"), conf), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{answer: func(int) ([]*runtimeapi.PodSandbox, error) {
		return []*runtimeapi.PodSandbox{{State: runtimeapi.PodSandboxState_SANDBOX_READY}}, nil
	}}
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data, Runtime: rt})
	if _, err := c.SandboxDead(context.Background(), podOf("uid-1"), "sbX"); err == nil {
		t.Fatal("SandboxDead answered on a failed list")
	}
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod"},
		SandboxID: "sbX", Reason: ports.ReasonPodGone})
	if err == nil || testcni.Exists(log) {
		t.Fatalf("DestroyPU: %v; plugin ran: %v", err, testcni.Exists(log))
	}
	st := testcni.Address(t, c, "10.99.0.5")
	if len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Row != -1 {
		t.Fatalf("page: %+v", st.Attachments)
	}
}

// cni-freeing.md row 4 and the cache's entries that are links: "what such an entry holds is told on the address
// page", and counts as any entry's for whether the sandbox's namespace is gone. A sandbox whose attachment names a
// gone namespace, and whose other entry (a link libcni's runtime reads through) names one that is there, is not
// known dead: without a runtime, DestroyPU keeps it (row 5, ErrNoEvidence) and DELs nothing, and SandboxDead
// answers false. The same with the link's namespace gone too: freed (row 4).
func TestAuditHoldsALinkEntrysNamespaceCountsForRow4(t *testing.T) {
	for _, linkThere := range []bool{true, false} {
		t.Run(map[bool]string{true: "the link's namespace is there", false: "the link's namespace is gone"}[linkThere], func(t *testing.T) {
			e := newEnv(t)
			log := e.fakePlugin(t, "fake")
			nsDir := filepath.Join(t.TempDir(), "netns")
			if err := os.MkdirAll(nsDir, 0o755); err != nil {
				t.Fatal(err)
			}
			present := filepath.Join(nsDir, "present")
			if err := os.WriteFile(present, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			gone := filepath.Join(nsDir, "gone")
			regular := e.entryPath("net1", "sb1", "eth0")
			if err := os.WriteFile(regular, entryBytes(t, "net1", "sb1", "eth0", "uid-1", "ns", "pod", gone, conflist("net1", "fake")), 0o600); err != nil {
				t.Fatal(err)
			}
			linkNetns := gone
			if linkThere {
				linkNetns = present
			}
			target := filepath.Join(t.TempDir(), "net2-sb1-net1")
			if err := os.WriteFile(target, entryBytes(t, "net2", "sb1", "net1", "uid-1", "ns", "pod", linkNetns, conflist("net2", "fake")), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, e.entryPath("net2", "sb1", "net1")); err != nil {
				t.Fatal(err)
			}
			c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data})
			dead, err := c.SandboxDead(context.Background(), podOf("uid-1"), "sb1")
			if err != nil || dead == linkThere {
				t.Fatalf("SandboxDead = %v, %v; want %v", dead, err, !linkThere)
			}
			err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "pod"},
				SandboxID: "sb1", Reason: ports.ReasonPodGone})
			b, _ := os.ReadFile(log)
			if linkThere {
				if !errors.Is(err, cni.ErrNoEvidence) || !testcni.Exists(regular) || len(b) != 0 {
					t.Fatalf("a sandbox a link entry of which names a namespace that is there: DestroyPU %v, entry kept %v, plugin calls %q; want ErrNoEvidence, nothing DELed",
						err, testcni.Exists(regular), b)
				}
				return
			}
			if string(b) != "DEL sb1 eth0\n" || testcni.Exists(regular) {
				t.Fatalf("a sandbox whose every entry names a gone namespace: DestroyPU %v, plugin calls %q, entry kept %v; want its attachment DELed", err, b, testcni.Exists(regular))
			}
		})
	}
}

// cni-freeing.md: the DEL of an attachment runs its cached config's own plugins, never those of the network's
// directory (<ConfDir>/<network>/), which libcni does not cache; a cached config whose plugins are all there runs
// none: its entry is never freed, and DestroyPU answers ports.Permanent.
func TestAuditHoldsAnAttachmentsDELRunsItsCachedPluginsOnly(t *testing.T) {
	e := newEnv(t)
	inline, extra := e.fakePlugin(t, "inline"), e.fakePlugin(t, "extra")
	gone := filepath.Join(t.TempDir(), "gone") // a namespace gone from a directory that is there: row 4
	ev := func(uid, id string) ports.DestroyEvent {
		return ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "ns", Name: "pod"}, SandboxID: id, Reason: ports.ReasonPodGone}
	}
	for _, n := range []struct{ network, conf string }{
		{"net1", `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"inline"}]}`},
		{"net2", `{"cniVersion":"1.0.0","name":"net2"}`},
	} {
		if err := os.WriteFile(filepath.Join(e.conf, "10-"+n.network+".conflist"), []byte(n.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(e.conf, n.network), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.conf, n.network, "20-extra.conf"), []byte(`{"cniVersion":"1.0.0","type":"extra"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(network, id, uid, conf string) string {
		p := e.entryPath(network, id, "eth0")
		if err := os.WriteFile(p, entryBytes(t, network, id, "eth0", uid, "ns", "pod", gone, []byte(conf)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1 := write("net1", "sb1", "uid-1", `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"inline"}]}`)
	p2 := write("net2", "sb2", "uid-2", `{"cniVersion":"1.0.0","name":"net2"}`)
	c := mustNew(t, cni.Options{CacheDir: e.cache, PluginDirs: []string{e.bin}, ConfDir: e.conf, HostLocalDataDir: e.data})

	if err := c.DestroyPU(context.Background(), ev("uid-1", "sb1")); err != nil {
		t.Fatalf("DestroyPU of a config with a plugin of its own: %v", err)
	}
	b, _ := os.ReadFile(inline)
	if string(b) != "DEL sb1 eth0\n" || testcni.Exists(extra) || testcni.Exists(p1) {
		t.Fatalf("the DEL ran %q (its own plugin) and the network directory's plugin: %v; entry kept %v", b, testcni.Exists(extra), testcni.Exists(p1))
	}
	err := c.DestroyPU(context.Background(), ev("uid-2", "sb2"))
	if !ports.IsPermanent(err) || !testcni.Exists(p2) || testcni.Exists(extra) {
		t.Fatalf("a cached config of no plugin of its own: DestroyPU %v (permanent %v), entry kept %v, the directory's plugin ran %v",
			err, ports.IsPermanent(err), testcni.Exists(p2), testcni.Exists(extra))
	}
}
