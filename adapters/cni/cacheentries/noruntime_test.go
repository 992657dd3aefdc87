package cacheentries_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:22,123,127-129: without a runtime nothing is freed but a sandbox whose network namespace is
// gone; a /proc/<pid> path never tells that it is gone. ErrNoEvidence keeps those, the others are freed.
func TestHoldsNoRuntimeProcPathNoEvidence(t *testing.T) {
	e := newEnv(t)
	old := time.Now().Add(-time.Hour)
	e.write(filepath.Join(e.root, "netns", ".keep"), "")
	e.entry("podnet", "s1", "eth0", "uid-a", "/proc/999999999/ns/net", loggerConf("podnet", ""), "10.88.0.5", old)
	e.entry("podnet", "s2", "eth0", "uid-a", filepath.Join(e.root, "netns", "gone"), loggerConf("podnet", ""), "10.88.0.6", old.Add(time.Minute))
	e.entry("podnet", "s3", "eth0", "uid-a", filepath.Join(e.root, "no-such-dir", "x"), loggerConf("podnet", ""), "10.88.0.7", old.Add(2*time.Minute))
	c, err := cni.New(e.opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, Reason: ports.ReasonPodGone})
	d := e.dels()
	if !errors.Is(err, cni.ErrNoEvidence) || len(d) != 1 || !strings.Contains(d[0], "s2") {
		t.Errorf("DestroyPU %v, DELs %q", err, d)
	}
	for ip, row := range map[string]int{"10.88.0.5": 5, "10.88.0.7": 5} {
		st := testcni.Address(t, c, ip)
		if len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Row != row {
			t.Errorf("%s page: %+v", ip, st.Attachments)
		}
	}
	if dead, err := c.SandboxDead(context.Background(), podOf("uid-a"), "s1"); dead || err != nil {
		t.Errorf("SandboxDead(s1) %v %v", dead, err)
	}
}
