package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// tracker is a Tracker that records nothing of interest.
type tracker struct{}

func (tracker) Track(ports.PU) error            { return nil }
func (tracker) Untrack(string) bool             { return false }
func (tracker) TriggerPod(types.NamespacedName) {}

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

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reservation writes host-local's file <dataDir>/<network>/<ip>, modified age ago.
func reservation(t *testing.T, dataDir, network, ip, id, ifName string, age time.Duration) string {
	t.Helper()
	p := filepath.Join(dataDir, network, ip)
	write(t, p, id+"\r\n"+ifName)
	mt := time.Now().Add(-age)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	return p
}

// resyncOnce runs Resync until cond holds or d passes.
func resyncFor(t *testing.T, run func(ctx context.Context) error, d time.Duration, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && !cond() {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Resync: %v", err)
	}
}
