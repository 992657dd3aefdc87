package contracts_test

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/restarts.md:28-33: the informer's entries come first (tracked without a sandbox), Start lists the journal
// before its first check, "an entry tracked without a sandbox and not yet checked takes the sandbox the Inventory
// recorded. A sandbox replaced while the agent was down is thus destroyed as changed (row 10, with the old sandbox)".
func TestHoldsBoltRestartDestroysSandboxReplacedWhileDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		run := func(f func(e *deletion.Engine)) {
			j, err := bolt.Open(path, bolt.Options{Logger: deletiontest.Discard()})
			if err != nil {
				t.Fatal(err)
			}
			e := newEngine(t, w, deletion.Options{SandboxExtractor: w.extractor(), Observer: j, Inventory: j})
			f(e)
			synctest.Wait()
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
		}
		w.add("a", "uid-a", "s1")
		run(func(e *deletion.Engine) {
			_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a")}) // without a sandbox, as adapters/k8s tracks
			stop := deletiontest.Start(t, e)
			advance(10 * time.Second) // the first check adopts s1
			stop()
		})
		w.setSandbox("a", "s2") // replaced while the agent is down
		run(func(e *deletion.Engine) {
			_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a")}) // the informer's add comes first
			stop := deletiontest.Start(t, e)
			advance(10 * time.Second)
			stop()
		})
		if len(w.destroys) != 1 || w.destroys[0].SandboxID != "s1" || w.destroys[0].Reason != ports.ReasonSandboxChanged {
			t.Fatalf("destroys %v", w.destroys)
		}
	})
}
