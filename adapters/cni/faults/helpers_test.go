package faults_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/internal/testcni"
)

// observer records the Observer's calls.
type observer struct {
	mu                                   sync.Mutex
	freed, failed, would, reported, nets []string
}

func (o *observer) add(s *[]string, v string)         { o.mu.Lock(); *s = append(*s, v); o.mu.Unlock() }
func (o *observer) ReservationFreed(n, r string)      { o.add(&o.freed, n+"/"+r) }
func (o *observer) ReservationFreeFailed(n, r string) { o.add(&o.failed, n+"/"+r) }
func (o *observer) ReservationWouldFree(n, r string)  { o.add(&o.would, n+"/"+r) }
func (o *observer) ReservationReported(n, r string)   { o.add(&o.reported, n+"/"+r) }
func (o *observer) ReservationNetwork(n string)       { o.add(&o.nets, n) }
func (o *observer) get(s *[]string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), *s...)
}

// reservation writes host-local's file <dataDir>/<network>/<ip>, modified age ago.
func reservation(t *testing.T, dataDir, network, ip, id, ifName string, age time.Duration) string {
	t.Helper()
	return testcni.Reservation(t, dataDir, network, ip, id, ifName, time.Now().Add(-age))
}

// resyncOnce runs Resync until cond holds or d passes.
func resyncFor(t *testing.T, run func(ctx context.Context) error, d time.Duration, cond func() bool) {
	t.Helper()
	if _, err := testcni.RunUntil(run, d, 10*time.Millisecond, cond); err != nil {
		t.Fatalf("Resync: %v", err)
	}
}
