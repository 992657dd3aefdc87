package summaries_test

import (
	"context"
	"errors"
	"github.com/podsweeper/podsweeper/ports"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// docs/sdk/engine.md:66-69: "while a port fails (the API server down, the policy engine restarting), each failing port
// gets one error line per SweepInterval (how many failures, the last error and PU: the first failure after a quiet
// interval at once, the next ones summed up an interval after the last line, whoever drives the engine ...)".
// A failing Inventory: its first failure has a line at once; its second, a second later, must wait for the summary an
// interval after that line.
func TestAuditFailingListOneErrorLinePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lines
		cl := deletiontest.NewCluster()
		inv := deletiontest.NewInventory()
		inv.FailLists(errors.New("journal unreadable"))
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Inventory: inv, Logger: l.logger()})
		t0 := time.Now()
		deletiontest.Start(t, e)
		deletiontest.Advance(0)
		var stamps []time.Duration
		seen := 0
		for range 30 {
			deletiontest.Advance(100 * time.Millisecond)
			errs := l.with(`"error"="journal unreadable"`)
			var errLines []string
			for _, s := range errs {
				if !contains(s, `"level"=1`) {
					errLines = append(errLines, s)
				}
			}
			for ; seen < len(errLines); seen++ {
				stamps = append(stamps, time.Since(t0))
				t.Logf("+%v %s", time.Since(t0), errLines[seen])
			}
		}
		t.Logf("lists: %d", inv.Lists())
		for i := 1; i < len(stamps); i++ {
			if stamps[i]-stamps[i-1] < 5*time.Second-time.Millisecond {
				t.Errorf("two error lines for the failing Inventory %v apart (SweepInterval 5s)", stamps[i]-stamps[i-1])
			}
		}
	})
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (indexOf(s, sub) >= 0))
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// Same promise, an Inventory that hangs past its deadline: error lines about it within one SweepInterval.
func TestAuditHungListOneErrorLinePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lines
		cl := deletiontest.NewCluster()
		rel := make(chan struct{})
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) { <-rel; return nil, nil })
		e := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Inventory: inv, Logger: l.logger(), CheckTimeout: time.Second})
		t0 := time.Now()
		deletiontest.Start(t, e)
		var stamps []time.Duration
		seen := 0
		for range 100 {
			deletiontest.Advance(100 * time.Millisecond)
			var errLines []string
			for _, s := range strings.Split(l.all(), "\n") {
				if s != "" && !strings.Contains(s, `"level"=`) { // error lines only: info lines carry a level
					errLines = append(errLines, s)
				}
			}
			for ; seen < len(errLines); seen++ {
				stamps = append(stamps, time.Since(t0))
				t.Logf("+%v %s", time.Since(t0), errLines[seen])
			}
		}
		for i := 1; i < len(stamps); i++ {
			if stamps[i]-stamps[i-1] < 5*time.Second-time.Millisecond {
				t.Errorf("two error lines for the hung Inventory %v apart (SweepInterval 5s)", stamps[i]-stamps[i-1])
			}
		}
		close(rel)
		deletiontest.Advance(time.Minute)
	})
}
