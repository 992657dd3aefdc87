package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// unfilteredRuntime lists its sandboxes whatever the filter (a CRI that
// does not implement label selectors).
type unfilteredRuntime struct{ sbs []*runtimeapi.PodSandbox }

func (u unfilteredRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return u.sbs, nil
}

// doc.go: "A sandbox the runtime lists ready is never freed: it is the
// pod's current one. A gone pod of which the runtime lists a ready
// sandbox ... keeps every sandbox (ErrSandboxRunning)". The runtime lists
// the cached sandbox sbA, by its ID, ready, but without the kubelet's
// io.kubernetes.pod.uid label. ListPUs reads it as ready; DestroyPU drops
// it as "not listed" and, its namespace telling nothing (the cached path
// is in a directory the collector does not see), frees it (row 11).
func TestAuditReadySandboxWithoutUIDLabelIsKept(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", "/nonexistent-dir/netns/a", time.Time{})
	s := sb("sbA", "uid1", true, time.Now())
	s.Labels = nil
	c := e.collector(unfilteredRuntime{sbs: []*runtimeapi.PodSandbox{s}}, 0)
	err := c.DestroyPU(context.Background(), gone("uid1"))
	if e.delsOf("sbA") != 0 {
		t.Fatalf("freed sandbox sbA, which the runtime lists ready (DestroyPU = %v)", err)
	}
	if !errors.Is(err, cni.ErrSandboxRunning) {
		t.Fatalf("DestroyPU = %v, want ErrSandboxRunning", err)
	}
}
