package deletion_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

type lineCounter4 struct {
	mu    sync.Mutex
	lines []string
}

func (c *lineCounter4) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines = append(c.lines, args)
	}, funcr.Options{Verbosity: 0})
}

func (c *lineCounter4) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

func (c *lineCounter4) first() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lines) == 0 {
		return ""
	}
	return c.lines[0]
}

// Promise (docs/sdk/engine.md:50-52): "Logs scale with the failure, not with the PUs: while a port fails (the API
// server down, the policy engine restarting), each failing port gets one error line per `SweepInterval` (how many
// failures, the last error and PU)".
//
// Start runs with the default 5 s interval; GetPod fails for every pod; an agent also calls Sweep once a second (a
// custom schedule). Over 60 s the engine writes one "port failing" error line per Sweep, about 60, not about 12.
func TestAuditFailingPortOneErrorLinePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lc lineCounter4
		cluster := deletiontest.NewCluster()
		e := deletiontest.NewEngine(t, cluster, &deletiontest.Policy{}, deletion.Options{Logger: lc.logger()})
		for _, n := range []string{"a", "b", "c"} {
			if err := e.Track(cluster.CreatePod(nsKey(n), "node-a", "")); err != nil {
				t.Fatal(err)
			}
		}
		cluster.FailAllReads(errors.New("connection refused"))
		deletiontest.Start(t, e)
		synctest.Wait()
		for range 60 {
			e.Sweep(context.Background())
			time.Sleep(time.Second)
		}
		synctest.Wait()
		n := lc.count(`"port"="GetPod"`)
		if n > 60/5+2 {
			t.Errorf("GetPod failing for 60 s with a 5 s SweepInterval: %d error lines for it, want about %d; first: %s", n, 60/5, lc.first())
		}
	})
}
