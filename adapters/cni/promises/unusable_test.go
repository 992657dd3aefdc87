package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// "An entry of the PU that cannot be read or would run no plugin makes an
// error wrapping ErrUnusableEntry, marked ports.Permanent once every other
// attachment is freed." (collector.go DestroyPU doc). The pod's second
// entry is JSON that names the pod (K8S_POD_UID) but is not a usable libcni
// entry: no kind, no config, no ifName.
func TestAuditUnusableEntryOfThePodIsReported(t *testing.T) {
	cases := map[string]entryEdit{
		"no kind":      func(m map[string]any) { delete(m, "kind") },
		"other kind":   func(m map[string]any) { m["kind"] = "cniCacheV2" },
		"no config":    func(m map[string]any) { delete(m, "config") },
		"empty ifName": func(m map[string]any) { m["ifName"] = "" },
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now()
			e.write("net1", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour))
			e.write("net2", "sbA", "uid1", e.netns("a", false), now.Add(-time.Hour), opt)
			rt := &fakeRuntime{}
			rt.set(sb("sbA", "uid1", false, now.Add(-time.Hour)))
			c := e.collector(rt, 0)
			err := c.DestroyPU(context.Background(), gone("uid1"))
			if e.delsOf("sbA") != 1 {
				t.Fatalf("want net1's DEL only, got %v", e.dels())
			}
			if !e.exists("net2", "sbA") {
				t.Fatalf("the unusable entry was removed")
			}
			if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
				t.Fatalf("DestroyPU = %v, want a permanent error wrapping ErrUnusableEntry for the pod's unusable entry net2-sbA-eth0", err)
			}
		})
	}
}
