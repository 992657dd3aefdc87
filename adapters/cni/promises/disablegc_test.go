package promises_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// doc.go: "It never touches a network whose cached config, or whose config
// in Options.ConfDir, says "disableGC": true." and Options.ConfDir: "A
// network that a config there names with "disableGC": true is never
// touched, even when the config its attachments were added with (the
// cached one) did not say so."
//
// The network's config in ConfDir is a single plugin's .conf saying
// "disableGC": true, the format libcni's own LoadNetworkConf (and
// containerd's go-cni) still load and up-convert with ConfListFromConf;
// the cached config is that up-converted list, whose top level does not
// carry disableGC. The gone pod's attachment of it must not be DELed.
func TestAuditDisableGCInSinglePluginConfOfConfDir(t *testing.T) {
	e := newEnv(t)
	single := []byte(`{"cniVersion":"1.0.0","name":"net1","type":"fakeplugin","disableGC":true}`)
	if err := os.WriteFile(filepath.Join(e.conf, "10-net1.conf"), single, 0o644); err != nil {
		t.Fatal(err)
	}
	// What the runtime loads for net1, as libcni does.
	list, err := libcni.LoadNetworkConf(e.conf, "net1")
	if err != nil {
		t.Fatalf("libcni.LoadNetworkConf: %v", err)
	}
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) { m["config"] = list.Bytes })
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	err = c.DestroyPU(context.Background(), gone("uid1"))
	if n := e.delsOf("sbA"); n != 0 {
		t.Fatalf("DELed network net1 (%d DEL, DestroyPU = %v), whose config in ConfDir (10-net1.conf) says \"disableGC\": true", n, err)
	}
}
