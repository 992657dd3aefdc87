package cacheentries_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// cni-freeing.md:36-38: a file being written whose top-level name cannot be told yet keeps every network; a
// whole JSON file that is no network's config is passed over.
func TestHoldsConfDirNoteAndNamelessWriting(t *testing.T) {
	for name, tc := range map[string]struct {
		file string
		dels int
	}{
		"note":     {`{"note":"left by an operator"}`, 1},
		"nameless": {`{"cniVersion":"1.0.0","plugins":[{"type":"x"`, 0},
		"cut name": {`{"cniVersion":"1.0.0","name":"an`, 0},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			old := time.Now().Add(-time.Hour)
			rt := &fakeRuntime{}
			rt.sbs = append(rt.sbs, sb("s1", "uid-a", false, old))
			e.entry("bnet", "s1", "eth0", "uid-a", "", loggerConf("bnet", ""), "10.89.0.5", old)
			e.write(e.conf+"/00-x.json", tc.file)
			c, err := cni.New(e.opts(rt))
			if err != nil {
				t.Fatal(err)
			}
			err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-a"}, SandboxID: "s1", Reason: ports.ReasonPodGone})
			if len(e.dels()) != tc.dels {
				t.Errorf("DELs %q, want %d (DestroyPU %v)", e.dels(), tc.dels, err)
			}
			if tc.dels == 0 {
				st := testcni.Address(t, c, "10.89.0.5")
				if len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Row != -1 || len(st.Unread) == 0 {
					t.Errorf("page: %+v", st)
				}
			}
		})
	}
}
