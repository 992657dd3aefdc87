package promises_test

import (
	"context"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

// A single plugin's .conf that says "disableGC": true, loaded as the runtimes load one (libcni's
// ConfListFromConf, go-cni and ocicni): the cached config is a list of that one plugin, which
// still says "disableGC": true. With the .conf still in ConfDir, it is kept (a hold); once the
// .conf left ConfDir, only the cached config says so.
func TestAuditDisableGCCachedSingleConf(t *testing.T) {
	conf := `{"cniVersion":"1.0.0","name":"single","type":"fakeplug","disableGC":true}`
	//lint:ignore SA1019 the runtimes still load a single plugin's .conf this way
	pc, err := libcni.ConfFromBytes([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the runtimes still load a single plugin's .conf this way
	list, err := libcni.ConfListFromConf(pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cached config: %s", list.Bytes)
	for _, inConfDir := range []bool{true, false} {
		name := map[bool]string{true: "conf-in-confdir", false: "conf-gone-from-confdir"}[inConfDir]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if inConfDir {
				writeFile(t, e.conf, "10-single.conf", conf)
			}
			e.writeEntry(entryOpt{network: "single", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: string(list.Bytes)})
			c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
			err := c.DestroyPU(context.Background(), goneDefault(uidA))
			if e.delled("sb1") {
				t.Fatalf("DEL of network single, whose cached config says disableGC: true (err %v)", err)
			}
		})
	}
}
