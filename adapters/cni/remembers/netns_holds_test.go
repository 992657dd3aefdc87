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
	if exists(e.entryPath("net1", "sbGone", "eth0")) || !exists(e.entryPath("net1", "sbThere", "eth0")) {
		t.Fatalf("gone-namespace sandbox freed: %v; other kept: %v", !exists(e.entryPath("net1", "sbGone", "eth0")), exists(e.entryPath("net1", "sbThere", "eth0")))
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
	if err == nil || exists(log) {
		t.Fatalf("DestroyPU: %v; plugin ran: %v", err, exists(log))
	}
	st := addressOf(t, c, "10.99.0.5")
	if len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Row != -1 {
		t.Fatalf("page: %+v", st.Attachments)
	}
}
