package cni_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// doc.go: "It never touches a network whose cached config (of any entry of the cache, one it does not use
// included), or whose config in Options.ConfDir, says "disableGC": true", read again right before each DEL. A gone
// pod's sandbox has attachments of net1 and net2; while net1's DEL runs, the runtime's libcni writes another pod's
// entry of net2 whose cached config says disableGC: net2's attachment is kept, as it is when that entry is there
// before DestroyPU.
func TestACachedDisableGCWrittenDuringADestroyKeepsItsNetwork(t *testing.T) {
	for _, before := range []bool{false, true} {
		c := newCacheDir(t)
		inject := filepath.Join(filepath.Dir(c.dir), "inject")
		require.NoError(t, os.MkdirAll(inject, 0o755))
		script := fmt.Sprintf("#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> %s\nfor f in %s/*; do [ -e \"$f\" ] && mv \"$f\" %s/; done\nexit 0\n",
			c.calls, inject, filepath.Join(c.dir, "results"))
		require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "inject"), []byte(script), 0o755))
		c.write(entry{network: "net1", sandbox: "aaaa1111", uid: "uid-a", namespace: "apps", name: "gone",
			config: `{"cniVersion":"1.1.0","name":"net1","plugins":[{"type":"inject"}]}`})
		c.write(entry{network: "net2", sandbox: "aaaa1111", uid: "uid-a", namespace: "apps", name: "gone"})
		other := c.write(entry{network: "net2", sandbox: "cccc3333", uid: "uid-c", namespace: "apps", name: "other",
			config: `{"cniVersion":"1.1.0","name":"net2","disableGC":true,"plugins":[{"type":"logger"}]}`})
		if !before {
			require.NoError(t, os.Rename(filepath.Join(c.dir, "results", other), filepath.Join(inject, other)))
		}
		coll := c.collectorListingNone()
		err := coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "apps", Name: "gone"},
			SandboxID: "aaaa1111", Reason: ports.ReasonPodGone})
		require.True(t, c.exists(other), "the injected entry is in the cache")
		require.Equal(t, []string{"DEL:aaaa1111", "eth0"}, c.delCalls(),
			"entry there before DestroyPU: %v: net1's attachment DELed, net2's kept (its network's cached config says disableGC); DestroyPU: %v", before, err)
	}
}
