package meanwhile_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// runtime.go ErrOrderUnknown: a sandbox of a live pod refused for NewestSandboxTimeout is given up (permanent), and
// "its attachments are kept ... until its pod is gone: then they are freed with the pod's others".
func TestAuditHoldsGivenUpSandboxFreedWithItsGonePod(t *testing.T) {
	e := newEnv(t, "")
	marker := filepath.Join(filepath.Dir(e.cache), "okdel-ran")
	testcni.Write(t, filepath.Join(e.plugins, "okdel"), "#!/bin/sh\ncat >/dev/null\ntouch "+marker+"\nexit 0\n")
	if err := os.Chmod(filepath.Join(e.plugins, "okdel"), 0o755); err != nil {
		t.Fatal(err)
	}
	ns := filepath.Join(e.cache, "ns-s1") // there: the runtime may be creating it
	testcni.Write(t, ns, "")
	conf := base64.StdEncoding.EncodeToString([]byte(`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"okdel"}]}`))
	testcni.Write(t, filepath.Join(e.cache, "results", "n-s1-eth0"), `{"kind":"cniCacheV1","containerId":"s1","config":"`+conf+
		`","ifName":"eth0","networkName":"n","netns":"`+ns+`","cniArgs":[["K8S_POD_UID","u1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]],"result":{"cniVersion":"1.0.0"}}`)
	c := e.collector(t, func(o *cni.Options) { o.NewestSandboxTimeout = 100 * time.Millisecond })
	ev := ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "s1", Reason: ports.ReasonSandboxChanged}
	if err := c.DestroyPU(context.Background(), ev); !errors.Is(err, cni.ErrNewestSandbox) {
		t.Fatalf("first = %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	if err := c.DestroyPU(context.Background(), ev); !errors.Is(err, cni.ErrOrderUnknown) {
		t.Fatalf("after the timeout = %v", err)
	}
	if testcni.Exists(marker) {
		t.Fatal("freed while given up")
	}
	ev.Reason = ports.ReasonPodGone
	if err := c.DestroyPU(context.Background(), ev); err != nil || !testcni.Exists(marker) {
		t.Fatalf("pod gone = %v, freed %v", err, testcni.Exists(marker))
	}
}
