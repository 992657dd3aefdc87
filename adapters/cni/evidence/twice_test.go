package evidence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// doc (cni-freeing.md, "What the table promises"): "no sandbox the runtime lists ready is freed,
// and a gone pod the runtime runs keeps every sandbox". The runtime lists one sandbox ID twice:
// once stopped as pod P's, once ready as pod Q's. Q is gone from the API. Either pod may run in
// it: the answer is a failure (cni-freeing.md), on which nothing is decided, and nothing is freed.
func TestAuditSandboxListedTwiceForTwoPodsKeepsGonePod(t *testing.T) {
	e := newEnv(t)
	conf := hostLocalConf("net1", e.data, "10.0.0.0/24", false)
	e.writeConf(t, "10-net1.conflist", conf)
	old := time.Now().Add(-time.Hour)
	entry := e.entry(t, conf, "net1", "x1", "eth0", "", "uidQ", "ns", "q", `{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.7/24"}]}`, old)
	res := e.reserve(t, "net1", "10.0.0.7", "x1", "eth0", old)
	rt := &fakeRuntime{list: func(int) ([]*runtimeapi.PodSandbox, error) {
		return []*runtimeapi.PodSandbox{sbx("r1", "uidP", false, old), sbx("r1", "uidQ", true, old)}, nil
	}}
	c, err := cni.New(e.opts(rt))
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uidQ", Pod: types.NamespacedName{Namespace: "ns", Name: "q"}, SandboxID: "x1", Reason: ports.ReasonPodGone})
	if err == nil || !strings.Contains(err.Error(), "two pods'") || !testcni.Exists(entry) || !testcni.Exists(res) {
		t.Fatalf("DestroyPU = %v; entry kept %v, reservation kept %v: the runtime lists a ready sandbox that may be pod uidQ's", err, testcni.Exists(entry), testcni.Exists(res))
	}
}
