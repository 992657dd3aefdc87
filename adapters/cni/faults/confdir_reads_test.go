package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/cni-freeing.md: "while a file of ConfDir cannot be read (its permissions, or a link into a directory the
// collector does not see), nothing is", for it may say disableGC of any network. libcni reads a network's plugin
// configs from <ConfDir>/<network>/ too: when that is a link the collector cannot follow (into a directory its pod
// does not mount, though the runtime's may, or a loop), the gone pod's attachment of net1 is kept, with a plain error
// (tried again).
func TestANetworksConfigDirectoryLinkThatCannotBeFollowedKeepsEverything(t *testing.T) {
	for name, target := range map[string]string{"into what is not mounted": "/host-only/etc/cni/net.d/net1", "a loop": "net1"} {
		e, c, dels := logDelEnv(t, cni.Options{ResyncInterval: time.Hour})
		testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"logdel"}]}`)
		if err := os.Symlink(target, filepath.Join(e.conf, "net1")); err != nil {
			t.Fatal(err)
		}
		err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
			SandboxID: "sb-1", Reason: ports.ReasonPodGone})
		if b, _ := os.ReadFile(dels); len(b) > 0 {
			t.Errorf("%s: a DEL while net1's own config directory is a link the collector cannot follow: %q", name, b)
		}
		if err == nil || ports.IsPermanent(err) {
			t.Errorf("%s: DestroyPU = %v, want a plain error (kept, tried again)", name, err)
		}
	}
}

// docs/sdk/cni-freeing.md: a file of ConfDir that cannot be read keeps every network. One that opens and whose read
// fails (EIO: a failing disk, a FUSE mount; here a link to /proc/self/mem, whose first page is never mapped) cannot
// be read either, in ConfDir or in a network's directory of plugin configs.
func TestAConfDirFileWhoseReadFailsKeepsEverything(t *testing.T) {
	if _, err := os.ReadFile("/proc/self/mem"); err == nil {
		t.Skip("/proc/self/mem reads here")
	}
	for name, file := range map[string]string{"in ConfDir": "05-other.conflist", "in a network's directory": filepath.Join("net1", "p.conf")} {
		e, c, dels := logDelEnv(t, cni.Options{ResyncInterval: time.Hour})
		testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"logdel"}]}`)
		if err := os.MkdirAll(filepath.Join(e.conf, "net1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/proc/self/mem", filepath.Join(e.conf, file)); err != nil {
			t.Fatal(err)
		}
		err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
			SandboxID: "sb-1", Reason: ports.ReasonPodGone})
		if b, _ := os.ReadFile(dels); len(b) > 0 {
			t.Errorf("%s: a DEL while a file of ConfDir cannot be read: %q", name, b)
		}
		if err == nil || ports.IsPermanent(err) {
			t.Errorf("%s: DestroyPU = %v, want a plain error (kept, tried again)", name, err)
		}
	}
}
