package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// No DestroyPU of a PU whose pod the API server shows alive, in the PU's sandbox, on the node; and once every fault
// is cleared, no PU of a pod gone, moved or in another sandbox stays tracked.
func TestHoldsNoDestroyOfALivePU(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		if !t.Run(fmt.Sprint(seed), func(t *testing.T) { synctest.Test(t, func(t *testing.T) { fuzzLive(t, seed) }) }) {
			return
		}
	}
}

func fuzzLive(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	c := deletiontest.NewCluster()
	api := c.APIServer()
	pol := &deletiontest.Policy{}
	var mu sync.Mutex
	pol.SetAnswer(func(ctx context.Context, ev ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		p, err := api.GetPod(ctx, ev.Pod)
		if err != nil {
			return nil
		}
		cur, _ := c.SandboxID(ctx, p)
		if string(p.UID) == ev.PUID && p.Spec.NodeName == node && ev.Reason != ports.ReasonPodTerminated &&
			(ev.SandboxID == "" || ev.SandboxID == cur) {
			t.Errorf("seed %d: destroyed %v while its pod lives in sandbox %q", seed, ev, cur)
		}
		return nil
	})
	opts := deletion.Options{NodeName: node, Confirmer: api, SandboxExtractor: c, SandboxProber: c,
		SandboxConfirmer: c, Workers: 2, SweepInterval: time.Second}
	if rng.Intn(2) == 0 {
		opts.DestroyRate = 3
	}
	e := deletiontest.NewEngine(t, c, pol, opts)
	deletiontest.Start(t, e)
	names := []string{"a", "b", "c"}
	k := func(n string) types.NamespacedName { return key(n) }
	sb := 0
	for step := 0; step < 80; step++ {
		n := names[rng.Intn(len(names))]
		mu.Lock()
		switch rng.Intn(9) {
		case 0:
			sb++
			pu := c.CreatePod(k(n), node, fmt.Sprint("s", sb))
			mu.Unlock()
			if rng.Intn(2) == 0 {
				pu.SandboxID = ""
			}
			_ = e.Track(pu)
			mu.Lock()
		case 1:
			c.DeletePod(k(n))
		case 2:
			sb++
			_ = c.SetSandbox(k(n), fmt.Sprint("s", sb))
		case 3:
			_ = c.KillSandbox(k(n))
		case 4:
			c.FailReads(k(n), ports.ErrPodNotFound) // the cache lags
		case 5:
			c.FailReads(k(n), nil)
		case 6:
			_ = c.MovePod(k(n), "node-b")
		case 7:
			c.FailReads(k(n), errors.New("down"))
		case 8:
			e.TriggerPod(k(n))
		}
		mu.Unlock()
		if rng.Intn(2) == 0 {
			advance(time.Duration(rng.Intn(1200)) * time.Millisecond)
		}
	}
	for _, n := range names {
		c.FailReads(k(n), nil)
	}
	advance(30 * time.Second)
	for _, st := range e.Status() {
		p, err := api.GetPod(context.Background(), st.Pod)
		if err != nil || string(p.UID) != st.PUID || p.Spec.NodeName != node {
			t.Errorf("seed %d: %v still tracked 30s after every fault cleared (pod: %v)", seed, st.PU, err)
			continue
		}
		if cur, _ := c.SandboxID(context.Background(), p); st.SandboxID != "" && cur != "" && cur != st.SandboxID {
			t.Errorf("seed %d: %v still tracked; its pod runs in %s", seed, st.PU, cur)
		}
	}
}
