package cacheentries_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:49-51: "A refusal is timed from the first since the sandbox's place was last known (listed
// ready, or dead)." A sandbox refused (row 9), then listed ready, then unlisted again is refused anew: it is
// not freed until NewestSandboxTimeout after that new first refusal.
func TestHoldsRefusalTimedFromPlaceKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ns := filepath.Join(e.root, "netns", "ns1")
		e.write(ns, "")
		e.entry("podnet", "s1", "eth0", "uid-a", ns, loggerConf("podnet", ""), "10.88.0.5", time.Now())
		rt := &fakeRuntime{}
		opts := e.opts(rt)
		opts.NewestSandboxTimeout = 5 * time.Minute
		c, err := cni.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		ev := ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: "s1", Reason: ports.ReasonPodGone}
		ctx := context.Background()
		if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrSandboxRunning) {
			t.Fatalf("first: %v", err)
		}
		time.Sleep(4 * time.Minute)
		rt.mu.Lock()
		rt.sbs = []*runtimeapi.PodSandbox{sb("s1", "uid-a", true, time.Now())}
		rt.mu.Unlock()
		pod := &corev1.Pod{}
		pod.UID = "uid-a"
		if dead, err := c.SandboxDead(ctx, pod, "s1"); err != nil || dead {
			t.Fatalf("SandboxDead %v %v", dead, err)
		}
		rt.mu.Lock()
		rt.sbs = nil
		rt.mu.Unlock()
		time.Sleep(time.Second)
		if err := c.DestroyPU(ctx, ev); !errors.Is(err, cni.ErrSandboxRunning) {
			t.Fatalf("after ready: %v", err)
		}
		time.Sleep(61 * time.Second) // 5m2s after the first refusal, 1m1s after the refusal since it was listed ready
		err = c.DestroyPU(ctx, ev)
		if !errors.Is(err, cni.ErrSandboxRunning) || len(e.dels()) > 0 {
			t.Errorf("freed (%v, DELs %q) 1m after its first refusal since it was listed ready", err, e.dels())
		}
	})
}

// cni.Options.Runtime: "Each list of its sandboxes is given 10s, or ResyncInterval if shorter: one that fails
// or takes longer keeps everything (a plain error...)". The page then tells row -1.
func TestHoldsHangingRuntimeKeepsAndPageSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.entry("podnet", "s1", "eth0", "uid-a", "", loggerConf("podnet", ""), "10.88.0.5", time.Now())
		rt := &fakeRuntime{hang: true}
		c, err := cni.New(e.opts(rt))
		if err != nil {
			t.Fatal(err)
		}
		ev := ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: "s1", Reason: ports.ReasonPodGone}
		start := time.Now()
		err = c.DestroyPU(context.Background(), ev)
		took := time.Since(start)
		if err == nil || ports.IsPermanent(err) || took > 11*time.Second || len(e.dels()) > 0 {
			t.Errorf("DestroyPU with a hanging runtime: %v after %v, DELs %q", err, took, e.dels())
		}
		st := testcni.Address(t, c, "10.88.0.5")
		if len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Row != -1 {
			t.Errorf("page: %+v", st.Attachments)
		}
	})
}
