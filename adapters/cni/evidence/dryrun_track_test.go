package evidence_test

import (
	"context"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// doc (go doc Options.DryRun): a dry run "also has Resync track a PU it listed the time before,
// with the same sandbox, no more"; examples/cni-gc/README.md: "the cache's lists track it again
// only once it has left the cache and come back, or changed sandbox". Here the pod's PU is in
// the engine's Inventory (ListPUs at start), leaves the cache for one list, and comes back.
func TestAuditDryRunTracksPUBackInCache(t *testing.T) {
	e := newEnv(t)
	conf := hostLocalConf("net1", e.data, "10.0.0.0/24", false)
	e.writeConf(t, "10-net1.conflist", conf)
	synctest.Test(t, func(t *testing.T) {
		old := time.Now().Add(-time.Hour)
		p := e.entry(t, conf, "net1", "a1", "eth0", "", "uidP", "ns", "p", `{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.7/24"}]}`, old)
		b, _ := os.ReadFile(p)
		o := e.opts(nil)
		o.DryRun, o.ResyncInterval = true, time.Second
		c, err := cni.New(o)
		if err != nil {
			t.Fatal(err)
		}
		pus, err := c.ListPUs(context.Background()) // the engine's Inventory
		if err != nil || len(pus) != 1 {
			t.Fatalf("inventory %v %v", pus, err)
		}
		tr := &testcni.Recorder{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = c.Resync(ctx, tr); close(done) }()
		time.Sleep(1500 * time.Millisecond) // list 1: listed as in the Inventory, not tracked again
		synctest.Wait()
		os.Remove(p)
		time.Sleep(time.Second) // list 2: gone from the cache
		synctest.Wait()
		os.WriteFile(p, b, 0o600) // back
		os.Chtimes(p, old, old)
		time.Sleep(time.Second) // list 3: back in the cache
		synctest.Wait()
		time.Sleep(time.Second) // list 4
		synctest.Wait()
		cancel()
		<-done
		if len(tr.Tracked()) == 0 {
			t.Fatalf("the PU of a pod that left the cache and came back was never tracked again (tracked %v, triggers %v)", tr.Tracked(), tr.Triggered())
		}
	})
}

// Control: without the Inventory's list, the same lists do track the PU back (lists 1 and 3).
func TestAuditHoldsDryRunTracksPUBackInCacheWithoutInventory(t *testing.T) {
	e := newEnv(t)
	conf := hostLocalConf("net1", e.data, "10.0.0.0/24", false)
	e.writeConf(t, "10-net1.conflist", conf)
	synctest.Test(t, func(t *testing.T) {
		old := time.Now().Add(-time.Hour)
		p := e.entry(t, conf, "net1", "a1", "eth0", "", "uidP", "ns", "p", `{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.7/24"}]}`, old)
		b, _ := os.ReadFile(p)
		o := e.opts(nil)
		o.DryRun, o.ResyncInterval = true, time.Second
		c, err := cni.New(o)
		if err != nil {
			t.Fatal(err)
		}
		tr := &testcni.Recorder{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = c.Resync(ctx, tr); close(done) }()
		time.Sleep(1500 * time.Millisecond) // list 1: listed as in the Inventory, not tracked again
		synctest.Wait()
		os.Remove(p)
		time.Sleep(time.Second) // list 2: gone from the cache
		synctest.Wait()
		os.WriteFile(p, b, 0o600) // back
		os.Chtimes(p, old, old)
		time.Sleep(time.Second) // list 3: back in the cache
		synctest.Wait()
		time.Sleep(time.Second) // list 4
		synctest.Wait()
		cancel()
		<-done
		if len(tr.Tracked()) != 2 {
			t.Fatalf("the PU of a pod that left the cache and came back was never tracked again (tracked %v, triggers %v)", tr.Tracked(), tr.Triggered())
		}
	})
}
