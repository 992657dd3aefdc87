package meanwhile_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

func entry(network, id, ifName, uid, plugin string) string {
	conf := base64.StdEncoding.EncodeToString([]byte(`{"cniVersion":"1.0.0","name":"` + network + `","plugins":[{"type":"` + plugin + `"}]}`))
	return `{"kind":"cniCacheV1","containerId":"` + id + `","config":"` + conf + `","ifName":"` + ifName + `","networkName":"` + network +
		`","cniArgs":[["K8S_POD_UID","` + uid + `"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],"result":{"cniVersion":"1.0.0"}}`
}

// cni-freeing.md:44-47: "A named pipe or a device in the cache may be any pod's entry, as one that cannot be read (a
// PU whose entry it may be answers `ErrUnusableEntry`)"; DestroyPU (go doc): "An entry of the PU that cannot be read
// or would run no plugin makes an error wrapping ErrUnusableEntry".
//
// A gone pod's sandbox with two attachments: while the first one's DEL runs (a plugin that takes 2s), the second's
// entry becomes a named pipe. DestroyPU then opens it to read its cached result right before its DEL, and waits for a
// writer forever, whatever its ctx says: it neither answers ErrUnusableEntry nor returns.
func TestAuditDestroyPUEntryBecomesFIFOAnswersUnusable(t *testing.T) {
	e := newEnv(t, "")
	testcni.Write(t, filepath.Join(e.plugins, "slowdel"), "#!/bin/sh\ncat >/dev/null\nsleep 2\nexit 0\n")
	testcni.Write(t, filepath.Join(e.plugins, "okdel"), "#!/bin/sh\ncat >/dev/null\nexit 0\n")
	for _, p := range []string{"slowdel", "okdel"} {
		if err := os.Chmod(filepath.Join(e.plugins, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	results := filepath.Join(e.cache, "results")
	testcni.Write(t, filepath.Join(results, "a-slow-sb1-eth0"), entry("a-slow", "sb1", "eth0", "u1", "slowdel"))
	second := filepath.Join(results, "b-fast-sb1-net1")
	testcni.Write(t, second, entry("b-fast", "sb1", "net1", "u1", "okdel"))
	c := e.collector(t, nil) // a Runtime that lists nothing: row 11 frees both

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.DestroyPU(ctx, ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb1", Reason: ports.ReasonPodGone})
	}()
	t.Cleanup(func() {
		if f, err := os.OpenFile(second, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	time.Sleep(700 * time.Millisecond) // a-slow's DEL runs
	if err := os.Remove(second); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(second, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, cni.ErrUnusableEntry) {
			t.Errorf("DestroyPU = %v, want ErrUnusableEntry for the named pipe", err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("DestroyPU did not return 7s after its ctx ended: it is stuck opening the named pipe %s", second)
		// Unblock it (libcni opens the pipe twice: the entry, then its legacy path, which is the same).
		for {
			if f, err := os.OpenFile(second, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}
