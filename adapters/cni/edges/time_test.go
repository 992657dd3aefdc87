package edges_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

var podA = types.NamespacedName{Namespace: "ns", Name: "pod-a"}

// TestHoldsRefusalTimedFromPlaceKnown: a gone pod's sandbox the runtime may be creating (not listed, its
// namespace there) is refused (row 9); listed ready meanwhile, its refusals are timed anew from the first after:
// NewestSandboxTimeout after the first refusal it is still refused, and it is freed (row 10) only
// NewestSandboxTimeout after the first refusal since it was listed ready.
func TestHoldsRefusalTimedFromPlaceKnown(t *testing.T) {
	e := newEnv(t)
	marker := filepath.Join(t.TempDir(), "dels")
	e.sweepPlugin(`echo "$CNI_CONTAINERID" >> ` + marker)
	e.netConf("10-net1.conflist", "net1", "")
	ns := filepath.Join(e.netnsDir, "a")
	testcni.Write(t, ns, "")
	e.cacheEntry(entry{Network: "net1", ID: "aaa", UID: "uid-a", NS: "ns", Name: "pod-a", IP: "10.1.0.30", NetNS: ns})
	synctest.Test(t, func(t *testing.T) {
		ready := false
		l := &logs{}
		o := e.opts(l)
		o.NewestSandboxTimeout = 5 * time.Minute
		o.Runtime = &countingRuntime{f: func(context.Context, int) ([]*runtimeapi.PodSandbox, error) {
			if ready {
				return []*runtimeapi.PodSandbox{{Id: "aaa", State: runtimeapi.PodSandboxState_SANDBOX_READY,
					Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-a"}}}, nil
			}
			return nil, nil
		}}
		c := newCollector(t, o)
		ev := ports.DestroyEvent{PUID: "uid-a", Pod: podA, SandboxID: "aaa", Reason: ports.ReasonPodGone}
		destroy := func(at string, want error) {
			t.Helper()
			err := c.DestroyPU(context.Background(), ev)
			if want == nil && err != nil || want != nil && !errors.Is(err, want) {
				t.Fatalf("%s: DestroyPU = %v, want %v", at, err, want)
			}
		}
		destroy("t0", cni.ErrSandboxRunning)
		time.Sleep(4 * time.Minute)
		ready = true
		destroy("t0+4m (listed ready)", cni.ErrSandboxRunning)
		time.Sleep(30 * time.Second)
		ready = false
		destroy("t0+4m30s", cni.ErrSandboxRunning)
		time.Sleep(time.Minute)
		destroy("t0+5m30s", cni.ErrSandboxRunning)
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a DEL ran while it was refused")
		}
		time.Sleep(4 * time.Minute)
		destroy("t0+9m30s", nil)
		if _, err := os.Stat(marker); err != nil {
			t.Fatal("row 10: no DEL ran")
		}
	})
}

// TestHoldsHangingRuntimeGivenResyncInterval: a Runtime that hangs, ignoring its context, is given
// ResyncInterval (shorter than 10s): DestroyPU then keeps everything with a plain error.
func TestHoldsHangingRuntimeGivenResyncInterval(t *testing.T) {
	e := newEnv(t)
	e.sweepPlugin("")
	e.netConf("10-net1.conflist", "net1", "")
	e.cacheEntry(entry{Network: "net1", ID: "aaa", UID: "uid-a", NS: "ns", Name: "pod-a", IP: "10.1.0.31"})
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		o := e.opts(&logs{})
		o.ResyncInterval = 3 * time.Second
		o.Runtime = &countingRuntime{f: func(context.Context, int) ([]*runtimeapi.PodSandbox, error) {
			<-release
			return nil, nil
		}}
		c := newCollector(t, o)
		start := time.Now()
		err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: podA, SandboxID: "aaa", Reason: ports.ReasonPodGone})
		if took := time.Since(start); err == nil || ports.IsPermanent(err) || took != 3*time.Second {
			t.Fatalf("DestroyPU = %v after %v; want a plain error after 3s", err, took)
		}
	})
}
