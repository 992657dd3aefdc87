package cacheentries_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:47-49: "ConfDir is read again right before each DEL, and the verdict asked again on it: a
// disableGC set while another DEL of the pod runs keeps that network's attachment." The page tells it kept.
func TestHoldsDisableGCSetMidwayKeeps(t *testing.T) {
	e := newEnv(t)
	setter := "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> " + e.delLog + "\n" +
		"printf '%s' '" + loggerConf("bnet", `,"disableGC":true`) + "' > " + filepath.Join(e.conf, "20-bnet.conflist") + "\nexit 0\n"
	if err := os.WriteFile(filepath.Join(e.bin, "setter"), []byte(setter), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	rt := &fakeRuntime{}
	rt.sbs = append(rt.sbs, sb("s1", "uid-a", false, old))
	e.entry("anet", "s1", "eth0", "uid-a", "", `{"cniVersion":"1.0.0","name":"anet","plugins":[{"type":"setter"}]}`, "10.88.0.5", old)
	e.entry("bnet", "s1", "net1", "uid-a", "", loggerConf("bnet", ""), "10.89.0.5", old)
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: "s1", Reason: ports.ReasonPodGone})
	d := e.dels()
	if len(d) != 1 || !strings.Contains(d[0], "eth0") {
		t.Errorf("DELs %q (DestroyPU %v)", d, err)
	}
	st := testcni.Address(t, c, "10.89.0.5")
	if len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Verdict != "keep" || !st.Attachments[0].DisableGC {
		t.Errorf("page: %+v", st.Attachments)
	}
}
