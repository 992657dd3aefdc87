package promises_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// doc.go: "It never removes a cache file itself: libcni does, after a DEL
// whose plugins all succeeded. A DEL that fails keeps the file and is
// retried by the engine with backoff." DestroyPU: "A DEL that fails keeps
// its entry and makes a plain error, for the engine to retry with backoff".
//
// The gone pod's entry is a libcni entry the collector accepts, but its
// cached "result" is one libcni cannot load (a result of a version it does
// not know, or malformed). The plugin's DEL fails. libcni's DelNetworkList
// removes the entry before running the plugins when the cached result does
// not load, so the failed DEL left no entry: the leak was never retried. It is now reported and kept.
func TestAuditFailedDelKeepsEntryWhateverItsCachedResult(t *testing.T) {
	for name, result := range map[string]any{
		"unknown version": map[string]any{"cniVersion": "9.9.9", "ips": []any{}},
		"malformed":       map[string]any{"cniVersion": "1.0.0", "interfaces": "not a list"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if err := os.WriteFile(filepath.Join(e.plugins, "failplugin"), []byte(failPlugin), 0o755); err != nil {
				t.Fatal(err)
			}
			e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
				m["config"] = []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"failplugin"}]}`)
				b, _ := json.Marshal(result)
				m["result"] = json.RawMessage(b)
			})
			rt := &fakeRuntime{}
			rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
			c := e.collector(rt, 0)
			pus, err := c.ListPUs(context.Background())
			if err != nil || len(pus) != 1 {
				t.Fatalf("ListPUs %v %v: the entry is not one the collector acts on", pus, err)
			}
			err = c.DestroyPU(context.Background(), gone("uid1"))
			// An entry whose cached result libcni cannot load is one the collector cannot read: it is
			// reported (ErrUnusableEntry, permanent) and left as it is, never DELed, since libcni would
			// remove it before running any plugin.
			if e.delsOf("sbA") != 0 {
				t.Fatalf("DELs %v (err %v): libcni removes such an entry before any plugin runs", e.dels(), err)
			}
			if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
				t.Fatalf("DestroyPU = %v, want a permanent ErrUnusableEntry", err)
			}
			if !e.exists("net1", "sbA") {
				t.Fatalf("the DEL failed (%v) and the cache entry is gone: nothing is left to retry", err)
			}
		})
	}
}
