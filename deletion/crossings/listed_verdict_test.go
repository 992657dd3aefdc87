package crossings_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Verdict.Row: "Row is the row of the decision table that decided (1 to 12 ...), or 0 for AskSandbox and AskProber,
// which decide nothing yet." Event.Verdict: "the verdict of the check (EventChecked ...)". PUStatus.LastVerdict: "the
// verdict that check carried out; its Row and Why say why the PU is kept."
//
// A PU's first check runs while a retry of the Inventory's list answers the PU with a sandbox; the check's extractor
// then answers another sandbox (row 7).
func TestAuditCheckVerdictIsATableRow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := deletiontest.NewCluster()
		pu := cl.CreatePod(key("a"), node, "sb-2") // the pod runs in sb-2 now
		listedPU := pu
		listedPU.SandboxID = "sb-1" // the journal recorded sb-1
		inv := deletiontest.NewInventory(listedPU)
		inv.FailNextLists(1, errors.New("journal busy"))

		var mu sync.Mutex
		calls := 0
		first, second := make(chan struct{}), make(chan struct{})
		ext := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			switch n {
			case 1:
				<-first
			case 2:
				select {
				case <-second:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			return cl.SandboxID(ctx, pod)
		})
		rec := &recorder{}
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{NodeName: node, SandboxExtractor: ext,
			Inventory: inv, Observer: rec, RetryMinDelay: time.Second, CheckTimeout: time.Minute})
		trackPU := pu
		trackPU.SandboxID = "" // an informer's add after a restart: no sandbox known
		if err := e.Track(trackPU); err != nil {
			t.Fatal(err)
		}
		e.TriggerPod(pu.Pod) // checked as soon as Start's checks begin
		deletiontest.Start(t, e)
		deletiontest.Advance(3 * time.Second) // the first list failed; the first check waits in the extractor; the retry answered
		if !e.InventoryListed() {
			t.Fatal("the retry did not answer")
		}
		close(first)
		synctest.Wait()
		var checked []deletion.Event
		rec.mu.Lock()
		for _, ev := range rec.evs {
			if ev.Kind == deletion.EventChecked {
				checked = append(checked, ev)
			}
		}
		rec.mu.Unlock()
		st := e.Status()
		close(second)
		deletiontest.Advance(time.Second)
		if len(checked) == 0 {
			t.Fatal("no EventChecked")
		}
		v := checked[0].Verdict
		if v.Row < 1 || v.Row > 12 {
			t.Errorf("EventChecked.Verdict = %+v (%s): a check that carried out no verdict of the table (the zero Verdict)", v, v)
		}
		if len(st) == 1 && (st[0].LastVerdict.Row < 1 || st[0].LastVerdict.Action != deletion.Keep) {
			t.Errorf("Status LastVerdict = %+v (%s, why %q): not a verdict a check carries out", st[0].LastVerdict, st[0].LastVerdict, st[0].LastVerdict.Why())
		}
	})
}
