package evidence_test

import (
	"context"
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

// doc (cni-freeing.md row 4): free when "its network namespace is gone (one of its attachments
// names a path that is gone, and none names one that is there; its cache entries not used,
// links among them, count as its attachments do)"; row 5: without a runtime, keep
// (ErrNoEvidence). The sandbox's second entry is one the collector does not use (its CNI_ARGS
// lack K8S_POD_NAME), of the same sandbox and pod UID, and names a namespace that is there.
func TestAuditUnusedEntryWithoutPodNameCountsForNamespace(t *testing.T) {
	e := newEnv(t)
	nsdir := t.TempDir()
	gone, there := filepath.Join(nsdir, "cni-gone"), filepath.Join(nsdir, "cni-there")
	os.WriteFile(there, nil, 0o644)
	c1 := []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"okdel"}]}`)
	c2 := []byte(`{"cniVersion":"1.0.0","name":"net2","plugins":[{"type":"okdel"}]}`)
	old := time.Now().Add(-time.Hour)
	p1 := e.entry(t, c1, "net1", "s1", "eth0", gone, "uidG", "ns", "g", `{"cniVersion":"1.0.0"}`, old)
	e.entry(t, c2, "net2", "s1", "net2", there, "uidG", "ns", "", `{"cniVersion":"1.0.0"}`, old)
	c, err := cni.New(e.opts(nil)) // no runtime: only a gone namespace is evidence
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uidG", Pod: types.NamespacedName{Namespace: "ns", Name: "g"}, SandboxID: "s1", Reason: ports.ReasonPodGone})
	if !testcni.Exists(p1) || !errors.Is(err, cni.ErrNoEvidence) {
		t.Fatalf("DestroyPU = %v, net1 entry kept %v: a cache entry of the sandbox names a namespace that is there", err, testcni.Exists(p1))
	}
}
