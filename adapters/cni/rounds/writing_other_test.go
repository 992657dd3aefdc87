package rounds_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// A config of ConfDir being written keeps the network it names by no row,
// "and every other network is decided as ever": a gone pod's dead sandbox
// whose only attachment is of another, whole network is kept too, by no row,
// for the network being written.
func TestAuditConfigBeingWrittenKeepsOtherNetwork(t *testing.T) {
	for _, tc := range []struct {
		name              string
		oneSandbox, entry bool
	}{{"two sandboxes", false, false}, {"one sandbox, two networks", true, false}, {"another pod's cache entry of n2 cut short", false, true}} {
		oneSandbox := tc.oneSandbox
		t.Run(tc.name, func(t *testing.T) {
			pd, calls := fakePlugins(t)
			e := newEnv(t)
			nsDir := filepath.Join(e.root, "netns") // there, and the sandboxes' namespaces in it gone: dead (row 4)
			if err := os.MkdirAll(nsDir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(e.conf, "10-n1.conflist"), `{"cniVersion":"1.0.0","name":"n1","plugins":[{"type":"okplug"}]}`, 0)
			if tc.entry { // n2's config whole; another pod's cache entry of n2 is being written (empty: its first instant)
				write(t, filepath.Join(e.conf, "20-n2.conflist"), `{"cniVersion":"1.0.0","name":"n2","plugins":[{"type":"okplug"}]}`, 0)
				write(t, filepath.Join(e.cache, "results", "n2-otherpodsandbox-eth0"), "", 0)
			} else {
				write(t, filepath.Join(e.conf, "20-n2.conflist"), `{"cniVersion":"1.0.0","name":"n2","plugins":[{"type":"okp`, 0) // being written
			}
			uid := "uid-p"
			s2 := "sandbox2"
			if oneSandbox {
				s2 = "sandbox1"
			}
			cacheEntry(t, e.cache, entryOpts{network: "n1", id: "sandbox1", ifName: "eth0", netns: filepath.Join(nsDir, "cni-1"), uid: uid, ns: "default", name: "p", ip: "10.40.0.5"})
			cacheEntry(t, e.cache, entryOpts{network: "n2", id: s2, ifName: "net1", netns: filepath.Join(nsDir, "cni-2"), uid: uid, ns: "default", name: "p", ip: "10.41.0.5"})
			c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
				Runtime: &testcni.Runtime{}})
			if err != nil {
				t.Fatal(err)
			}
			derr := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "p"},
				SandboxID: "sandbox1", Reason: ports.ReasonPodGone})
			st, _ := page(t, c, "10.40.0.5")
			b, _ := os.ReadFile(calls)
			n1Entry := filepath.Join(e.cache, "results", "n1-sandbox1-eth0")
			if testcni.Exists(n1Entry) {
				var d cni.FreeDecision
				if len(st.Attachments) > 0 && st.Attachments[0].Decision != nil {
					d = *st.Attachments[0].Decision
				}
				t.Fatalf("the dead sandbox's attachment of network n1 (its config whole) was not DELed (plugin calls: %q; DestroyPU: %v); "+
					"the page tells it row %d, %q: %s", string(b), derr, d.Row, d.Verdict, d.Why)
			}
		})
	}
}

// The same pod with both configs whole: both dead sandboxes' attachments are DELed.
func TestAuditHoldsDeadSandboxesFreed(t *testing.T) {
	pd, calls := fakePlugins(t)
	e := newEnv(t)
	nsDir := filepath.Join(e.root, "netns")
	if err := os.MkdirAll(nsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.conf, "10-n1.conflist"), `{"cniVersion":"1.0.0","name":"n1","plugins":[{"type":"okplug"}]}`, 0)
	write(t, filepath.Join(e.conf, "20-n2.conflist"), `{"cniVersion":"1.0.0","name":"n2","plugins":[{"type":"okplug"}]}`, 0)
	uid := "uid-p"
	cacheEntry(t, e.cache, entryOpts{network: "n1", id: "sandbox1", ifName: "eth0", netns: filepath.Join(nsDir, "cni-1"), uid: uid, ns: "default", name: "p", ip: "10.40.0.5"})
	cacheEntry(t, e.cache, entryOpts{network: "n2", id: "sandbox2", ifName: "net1", netns: filepath.Join(nsDir, "cni-2"), uid: uid, ns: "default", name: "p", ip: "10.41.0.5"})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data, Runtime: &testcni.Runtime{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: uid, Pod: types.NamespacedName{Namespace: "default", Name: "p"},
		SandboxID: "sandbox1", Reason: ports.ReasonPodGone}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(calls)
	if testcni.Exists(filepath.Join(e.cache, "results", "n1-sandbox1-eth0")) || testcni.Exists(filepath.Join(e.cache, "results", "n2-sandbox2-net1")) {
		t.Fatalf("not freed; calls %q", b)
	}
}
