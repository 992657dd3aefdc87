package cacheentries_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni.ErrOrderUnknown: "its attachments are kept for an operator to look at, until its pod is gone: then they
// are freed with the pod's others (row 8 of the table)"; DryRunDestroyPU answers as DestroyPU would.
func TestHoldsGiveUpThenGoneFrees(t *testing.T) {
	for _, dry := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t)
			ns := filepath.Join(e.root, "netns", "ns1")
			e.write(ns, "")
			e.entry("podnet", "s1", "eth0", "uid-a", ns, loggerConf("podnet", ""), "10.88.0.5", time.Now())
			c, err := cni.New(e.opts(&fakeRuntime{}))
			if err != nil {
				t.Fatal(err)
			}
			destroy := c.DestroyPU
			if dry {
				destroy = c.DryRunDestroyPU
			}
			pod := types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}
			ch := ports.DestroyEvent{PUID: "uid-a", Pod: pod, SandboxID: "s1", Reason: ports.ReasonSandboxChanged}
			if err := destroy(context.Background(), ch); !errors.Is(err, cni.ErrNewestSandbox) {
				t.Fatalf("first: %v", err)
			}
			time.Sleep(time.Minute)
			if err := destroy(context.Background(), ch); !errors.Is(err, cni.ErrOrderUnknown) || !ports.IsPermanent(err) {
				t.Fatalf("after timeout: %v", err)
			}
			if pus, _ := c.ListPUs(context.Background()); len(pus) != 1 || pus[0].SandboxID != "" {
				t.Errorf("ListPUs after give-up: %+v", pus)
			}
			gone := ports.DestroyEvent{PUID: "uid-a", Pod: pod, SandboxID: "", Reason: ports.ReasonPodGone}
			err = destroy(context.Background(), gone)
			if err != nil || (!dry && len(e.dels()) != 1) {
				t.Errorf("dry=%v gone after give-up: %v, DELs %q", dry, err, e.dels())
			}
		})
	}
}
