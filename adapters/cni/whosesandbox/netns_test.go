package whosesandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Promise (docs/sdk/cni-freeing.md:21, row 4): a sandbox is dead when "its network namespace is gone (one of
// its attachments names a path that is gone, and none names one that is there; its cache entries not used,
// links among them, count as its attachments do)". Here sandbox S has two entries in libcni's cache: pod A's
// on net1, added with a namespace path that is gone, and one on net2 whose CNI_ARGS name pod B, added with a
// namespace path that is there. S's namespace is not gone: no row frees it without a runtime (row 5).
func TestAuditNetnsOfASandboxsOtherPodEntryIgnored(t *testing.T) {
	e := newEnv(t)
	conf1 := e.hostLocalList("net1", nil)
	conf2 := e.hostLocalList("net2", nil)
	e.writeConf(t, "10-net1.conflist", conf1)
	e.writeConf(t, "20-net2.conflist", conf2)
	present := filepath.Join(e.netns, "cni-present")
	if err := os.WriteFile(present, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(e.netns, "cni-gone")
	entryA := e.entry(t, "net1", "sandboxS", "eth0", "uid-a", "ns", "p", gone, conf1, "10.22.0.5")
	e.entry(t, "net2", "sandboxS", "eth1", "uid-b", "ns", "q", present, conf2, "10.22.0.6")

	c, err := cni.New(e.opts(nil)) // no runtime: row 4 or row 5
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: types.UID("uid-a")}}
	dead, derr := c.SandboxDead(context.Background(), pod, "sandboxS")
	err = c.DestroyPU(context.Background(), goneEvent("uid-a", "sandboxS"))
	t.Logf("SandboxDead = %v, %v; DestroyPU = %v", dead, derr, err)
	if dead {
		t.Errorf("SandboxDead(sandboxS) = true while an entry of sandboxS names a namespace path that is there")
	}
	if !testcni.Exists(entryA) {
		t.Errorf("pod A's attachment of sandboxS was freed (row 4) while an entry of sandboxS names a namespace path that is there: want kept, ErrNoEvidence (row 5)")
	}
	if !errors.Is(err, cni.ErrNoEvidence) {
		t.Errorf("DestroyPU = %v, want ErrNoEvidence", err)
	}
}

// Control: the same entry of pod B without pod arguments (an unused entry) keeps sandbox S, as the table says.
func TestAuditHoldsNetnsOfUnusedEntryCounts(t *testing.T) {
	e := newEnv(t)
	conf1 := e.hostLocalList("net1", nil)
	conf2 := e.hostLocalList("net2", nil)
	e.writeConf(t, "10-net1.conflist", conf1)
	e.writeConf(t, "20-net2.conflist", conf2)
	present := filepath.Join(e.netns, "cni-present")
	os.WriteFile(present, nil, 0o644)
	gone := filepath.Join(e.netns, "cni-gone")
	entryA := e.entry(t, "net1", "sandboxS", "eth0", "uid-a", "ns", "p", gone, conf1, "10.22.0.5")
	e.entry(t, "net2", "sandboxS", "eth1", "", "", "", present, conf2, "10.22.0.6")
	c, err := cni.New(e.opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), goneEvent("uid-a", "sandboxS"))
	if !testcni.Exists(entryA) || !errors.Is(err, cni.ErrNoEvidence) {
		t.Fatalf("DestroyPU = %v, entry there %v", err, testcni.Exists(entryA))
	}
}
