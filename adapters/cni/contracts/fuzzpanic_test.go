package contracts_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

var fragments = []string{`{`, `}`, `[`, `]`, `"name":"net1"`, `"name":`, `"plugins":[{"type":"fakeplug"}]`, `"plugins":[]`, `"disableGC":true`,
	`"disableGC":"1"`, `"cniVersion":"1.0.0"`, `"kind":"cniCacheV1"`, `"containerId":"sb1"`, `"ifName":"eth0"`, `"networkName":"net1"`,
	`"config":"eyJuYW1lIjoibmV0MSIsImNuaVZlcnNpb24iOiIxLjAuMCIsInBsdWdpbnMiOlt7InR5cGUiOiJmYWtlcGx1ZyJ9XX0="`, `"cniArgs":[["K8S_POD_UID","u1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","p"]]`,
	`"result":{"cniVersion":"1.0.0","ips":[{"address":"10.9.0.5/16"}]}`, `,`, `"netns":"/nonexistent/x"`, `null`, `"ipam":{"type":"host-local","dataDir":"DATA"}`, `"type":"host-local"`}

func randJSON(r *rand.Rand, data string) []byte {
	n := r.Intn(12)
	s := ""
	for i := 0; i < n; i++ {
		s += fragments[r.Intn(len(fragments))]
	}
	b := []byte(s)
	if r.Intn(3) == 0 {
		b = entryJSON("net1", "sb1", "eth0", "/nonexistent/x", "u1", netConf("net1", data, r.Intn(2) == 0), "10.9.0.5")
		b = b[:r.Intn(len(b)+1)]
	}
	return []byte(string(b))
}

// go doc Collector: its methods answer, whatever the node holds: no panic on odd caches, configs and answers.
func TestHoldsNoPanicOnOddNode(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 150; round++ {
		e := newEnv(t)
		for i := 0; i < 3; i++ {
			must(t, os.WriteFile(filepath.Join(e.cache, "results", fmt.Sprintf("net1-sb%d-eth0", i)), randJSON(r, e.data), 0o600))
			must(t, os.WriteFile(filepath.Join(e.conf, fmt.Sprintf("%02d.conflist", i)), randJSON(r, e.data), 0o600))
		}
		e.writeReservation(e.data, "net1", "10.9.0.5", "sb1", "eth0", time.Hour)
		rt := &testcni.Runtime{}
		rt.Set(&runtimeapi.PodSandbox{Id: "sb2", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u1"}}, nil, &runtimeapi.PodSandbox{})
		c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
		must(t, err)
		ctx := context.Background()
		ev := ports.DestroyEvent{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sb1", Reason: ports.ReasonPodGone}
		_, _ = c.ListPUs(ctx)
		_ = c.DryRunDestroyPU(ctx, ev)
		_ = c.DestroyPU(ctx, ev)
		ev.Reason = ports.ReasonSandboxChanged
		_ = c.DestroyPU(ctx, ev)
		_, _ = c.SandboxDead(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}, "sb1")
		_ = testcni.Address(t, c, "10.9.0.5")
		cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		_ = c.Resync(cctx, testcni.NopTracker{})
		cancel()
	}
}
