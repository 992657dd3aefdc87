package meanwhile_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:55-56: "ConfDir is read again right before each DEL ...: a `disableGC` set while another DEL of the
// pod runs keeps that network's attachment."
func TestAuditHoldsDisableGCSetDuringAnotherDELKeeps(t *testing.T) {
	e := newEnv(t, "")
	testcni.Write(t, filepath.Join(e.plugins, "slowdel"), "#!/bin/sh\ncat >/dev/null\nsleep 2\nexit 0\n")
	marker := filepath.Join(filepath.Dir(e.cache), "okdel-ran")
	testcni.Write(t, filepath.Join(e.plugins, "okdel"), "#!/bin/sh\ncat >/dev/null\ntouch "+marker+"\nexit 0\n")
	for _, p := range []string{"slowdel", "okdel"} {
		if err := os.Chmod(filepath.Join(e.plugins, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	results := filepath.Join(e.cache, "results")
	testcni.Write(t, filepath.Join(results, "a-slow-sb1-eth0"), entry("a-slow", "sb1", "eth0", "u1", "slowdel"))
	testcni.Write(t, filepath.Join(results, "b-fast-sb1-net1"), entry("b-fast", "sb1", "net1", "u1", "okdel"))
	c := e.collector(t, nil)
	done := make(chan error, 1)
	go func() {
		done <- c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb1", Reason: ports.ReasonPodGone})
	}()
	time.Sleep(700 * time.Millisecond)
	testcni.Write(t, filepath.Join(e.conf, "50-b.conflist"), `{"cniVersion":"1.0.0","name":"b-fast","disableGC":true,"plugins":[{"type":"okdel"}]}`)
	<-done
	if testcni.Exists(marker) || !testcni.Exists(filepath.Join(results, "b-fast-sb1-net1")) {
		t.Fatal("an attachment whose network's config said disableGC right before its DEL was DELed")
	}
}
