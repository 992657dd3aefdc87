package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/engine.md:45-48: "Logs scale with the failure, not with the PUs: while a port fails (the API server down,
// the policy engine restarting), each failing port gets one error line per SweepInterval (how many failures, the last
// error and PU), each PU's first failure is logged at V(1)". The API server hangs past every deadline (a GetPod that
// ignores its context): 40 PUs, three intervals.
func TestAuditLogsScaleWithTheFailureNotThePUs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		sink := &errorSink{}
		getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			time.Sleep(1500 * time.Millisecond) // past CheckTimeout, ignoring ctx
			return cluster.GetPod(context.Background(), k)
		})
		engine := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{
			Workers: 40, CheckTimeout: time.Second, SweepInterval: 5 * time.Second, Logger: logr.New(sink),
		})
		for i := range 40 {
			_ = engine.Track(cluster.CreatePod(key(fmt.Sprint("p", i)), "node-a", ""))
		}
		deletiontest.Start(t, engine)
		deletiontest.Advance(15 * time.Second)
		lines := sink.lines()
		if len(lines) > 6 { // one per failing port per interval, with room for the edges
			t.Errorf("%d error lines in 3 intervals of a hung API server with 40 PUs: %v", len(lines), summary(lines))
		}
	})
}

// The same promise for the Inventory, one of the six ports (docs/sdk/ports.md): a policy engine restarting fails
// every list for a minute.
func TestAuditLogsOneErrorLinePerIntervalForAFailingInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		sink := &errorSink{}
		inv := deletiontest.NewInventory()
		inv.FailLists(errors.New("policy engine restarting"))
		engine := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{
			Inventory: inv, SweepInterval: 5 * time.Second, Logger: logr.New(sink),
		})
		deletiontest.Start(t, engine)
		deletiontest.Advance(5 * time.Second)
		if lines := sink.lines(); len(lines) > 2 {
			t.Errorf("%d error lines in one 5s interval of a failing Inventory (%d lists): %v", len(lines), inv.Lists(), summary(lines))
		}
		inv.FailLists(nil)
		deletiontest.Advance(2 * time.Minute)
	})
}
