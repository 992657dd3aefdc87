package cacheentries_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Hold: the same with the network's host-local inline.
func TestHoldsFifoNetworkInlineRow13(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	e.write(e.conf+"/podnet/.keep", "")
	if err := syscall.Mkfifo(filepath.Join(e.conf, "podnet", "20-pipe.conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.reservation(e.data, "podnet", "10.88.0.12", "feed01", "eth0", time.Now().Add(-time.Hour))
	c, err := cni.New(e.opts(&fakeRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.88.0.12")
	if len(st.Reservations) != 1 || st.Reservations[0].Decision.Row != 13 {
		t.Errorf("%+v", st.Reservations)
	}
}

// cni-freeing.md: "A named pipe or a device in the cache may be any pod's entry, as one that cannot be read (a PU
// whose entry it may be answers ErrUnusableEntry)"; DestroyPU of a gone pod frees "those of every sandbox of the pod
// UID". A pipe named as an entry of a sandbox the Runtime alone lists as the gone pod's (stopped) is the pod's, as
// one of a sandbox the cache tells is: the pod's other sandbox is freed, and the answer wraps ErrUnusableEntry.
func TestUnusableEntryOfASandboxTheRuntimeAloneListsIsThePods(t *testing.T) {
	for _, kind := range []string{"named pipe", "not libcni's"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			old := time.Now().Add(-time.Hour)
			e.entry("podnet", "s0", "eth0", "uid-a", filepath.Join(e.root, "netns", "gone"), loggerConf("podnet", ""), "10.88.0.4", old)
			p := filepath.Join(e.cache, "results", "podnet-s1-eth0")
			if kind == "named pipe" {
				if err := syscall.Mkfifo(p, 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				e.write(p, `{"kind":"cniCacheV1"}`)
			}
			c, err := cni.New(e.opts(&fakeRuntime{sbs: []*runtimeapi.PodSandbox{sb("s1", "uid-a", false, old.Add(time.Minute))}}))
			if err != nil {
				t.Fatal(err)
			}
			err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"},
				SandboxID: "s0", Reason: ports.ReasonPodGone})
			if !errors.Is(err, cni.ErrUnusableEntry) {
				t.Errorf("DestroyPU answered %v; want an error wrapping ErrUnusableEntry for %s", err, filepath.Base(p))
			}
			if got := e.dels(); len(got) != 1 {
				t.Errorf("DELs %v: want s0's", got)
			}
		})
	}
}
