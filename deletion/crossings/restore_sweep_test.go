package crossings_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// deletion.Options.Inventory: "A PU tracked without a sandbox and not yet checked takes the sandbox listed for it, so
// that a sandbox replaced meanwhile is destroyed as changed (row 10), not recorded (row 7). ... those PUs go in before
// any check, so that a sandbox it lists is taken before a check records another"; engine.md: "`Start`'s first list of
// the Inventory ... and the tracking of its answer, which comes before any check".
//
// The agent restarted; the journal holds X with its old sandbox, replaced while the agent was down. The informer
// tracked X without a sandbox. A Sweep, begun before Start, is checking X (its first check, a slow read) when Start
// lists the journal: X does not take the listed sandbox, and the check records the new one (row 7).
func TestAuditListedSandboxTakenBeforeACheckRecordsAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		x := cl.CreatePod(key("x"), "node-a", "sb-new")
		journal := deletiontest.NewInventory(ports.PU{PUID: x.PUID, Pod: x.Pod, SandboxID: "sb-old"})
		pol := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, cl, pol, deletion.Options{SandboxExtractor: cl, Inventory: journal,
			Observer: journal, NodeName: "node-a"})
		if err := e.Track(ports.PU{PUID: x.PUID, Pod: x.Pod}); err != nil { // the informer's add: no sandbox
			t.Fatal(err)
		}
		cl.SetReadDelay(2 * time.Second)
		go e.Sweep(context.Background()) // a Sweep begun before Start: its first check of X reads slowly
		time.Sleep(500 * time.Millisecond)
		deletiontest.Start(t, e) // lists the journal: X, sb-old
		deletiontest.Advance(time.Minute)
		cl.SetReadDelay(0)
		deletiontest.Advance(time.Minute)
		st := e.Status()
		t.Logf("status %+v; destroys %v", st, pol.Calls())
		if len(pol.Calls()) != 1 || pol.Calls()[0].Event.SandboxID != "sb-old" ||
			pol.Calls()[0].Event.Reason != ports.ReasonSandboxChanged {
			t.Errorf("the PU of the replaced sandbox sb-old was not destroyed as changed: status %+v, destroys %v", st, pol.Calls())
		}
	})
}
