package deletion_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// docs/sdk/engine.md: "Logs scale with the failure, not with the PUs". An Observer (a metrics exporter, say) that
// panics on every EventChecked is one failure; with 200 PUs tracked, one SweepInterval must not bring one error line
// per PU.
func TestAuditPanickingObserverLogsScaleWithTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, sink := newErrorLogger()
		cluster := deletiontest.NewCluster()
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked {
				panic("metrics exporter: label set mismatch")
			}
		})
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Observer: obs, Logger: log, SweepInterval: 5 * time.Second,
		})
		for i := range 200 {
			pu := cluster.CreatePod(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}, "node-a", "")
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(5 * time.Second)
		if n := sink.errorLines(); n > 10 {
			t.Errorf("one SweepInterval with an Observer that panics on every check of 200 PUs wrote %d error lines (%v), want a summary (a few lines), as a failing port gets",
				n, summary(sink.lines()))
		}
	})
}

// Holds: a failing port's errors are summed up, one error line per port per SweepInterval.
func TestAuditHoldsFailingPortLogsScaleWithTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, sink := newErrorLogger()
		cluster := deletiontest.NewCluster()
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Logger: log, SweepInterval: 5 * time.Second,
		})
		for i := range 200 {
			pu := cluster.CreatePod(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}, "node-a", "")
			if err := engine.Track(pu); err != nil {
				t.Fatal(err)
			}
		}
		cluster.FailAllReads(errors.New("connection refused"))
		deletiontest.Start(t, engine)
		deletiontest.Advance(20 * time.Second)
		if n := sink.errorLines(); n > 10 {
			t.Errorf("%d error lines for one failing port over 4 intervals: %v", n, summary(sink.lines()))
		}
	})
}
