package promises_test

// host-local's reservations that no sandbox accounts for: a network that any
// config of ConfDir names with disableGC is never touched, and a dry run tells
// each reservation it would free once.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// hostLocalConflist writes a config of network net to ConfDir's file name, running fakeplugin with host-local as
// its IPAM in dataDir, and the extra top-level keys.
func (e *env) hostLocalConflist(name, net, dataDir string, extra string) {
	e.t.Helper()
	b := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q%s,"plugins":[{"type":"fakeplugin","ipam":{"type":"host-local","dataDir":%q}}]}`,
		net, extra, dataDir)
	if err := os.WriteFile(filepath.Join(e.conf, name), []byte(b), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// reservation writes host-local's reservation of ip on net in dataDir, for container id, reserved at when.
func (e *env) reservation(dataDir, net, ip, id string, when time.Time) string {
	e.t.Helper()
	p := filepath.Join(dataDir, net, ip)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(id+"\r\neth0"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chtimes(p, when, when); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// reservationObserver counts what the Collector tells of reservations, and signals each read of them.
type reservationObserver struct {
	mu                   sync.Mutex
	freed, failed, would int
	rounds               chan struct{}
}

func newReservationObserver() *reservationObserver {
	return &reservationObserver{rounds: make(chan struct{}, 100)}
}

func (o *reservationObserver) ReservationFreed(string, string) { o.mu.Lock(); o.freed++; o.mu.Unlock() }
func (o *reservationObserver) ReservationFreeFailed(string, string) {
	o.mu.Lock()
	o.failed++
	o.mu.Unlock()
}
func (o *reservationObserver) ReservationWouldFree(string, string) {
	o.mu.Lock()
	o.would++
	o.mu.Unlock()
}
func (o *reservationObserver) ReservationReported(string, string) {}
func (o *reservationObserver) ReservationNetwork(string) {
	select {
	case o.rounds <- struct{}{}:
	default:
	}
}

func (o *reservationObserver) counts() (freed, failed, would int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.freed, o.failed, o.would
}

// waitRound waits for the next read of host-local's reservations.
func (o *reservationObserver) waitRound(t *testing.T) {
	t.Helper()
	select {
	case <-o.rounds:
	case <-time.After(30 * time.Second):
		t.Fatal("no resync round within 30s")
	}
}

// kick has a running Resync list and sweep again at once.
func kick(t *testing.T, c *cni.Collector) {
	t.Helper()
	if err := c.Requeue(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kick"}}); err != nil {
		t.Fatal(err)
	}
}

// steppedRuntime answers each ListPodSandbox with the next error the test gives it (nil: no sandbox).
type steppedRuntime struct{ answers chan error }

func (s steppedRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	select {
	case err := <-s.answers:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s steppedRuntime) answer(t *testing.T, err error) {
	t.Helper()
	select {
	case s.answers <- err:
	case <-time.After(30 * time.Second):
		t.Fatal("the runtime was not asked within 30s")
	}
}

// Options.ConfDir, doc.go, docs/sdk/cni-freeing.md row 13: a network that a
// config in ConfDir names with "disableGC": true is never touched, even when
// another config file (the one the runtime loads) names it without.
func TestDisableGCNetworkNamedTwiceIsNeverTouched(t *testing.T) {
	e := newEnv(t)
	data := filepath.Join(t.TempDir(), "networks")
	e.hostLocalConflist("10-net.conflist", "net", data, "")
	e.hostLocalConflist("20-net.conflist", "net", data, `,"disableGC":true`)
	res := e.reservation(data, "net", "10.22.0.5", "cafe0001", time.Now().Add(-time.Hour))
	o := newReservationObserver()
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: data,
		ResyncInterval: time.Hour, Runtime: &fakeRuntime{}, Observer: o, Logger: testcni.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, &fakeTracker{tracked: map[string]ports.PU{}}) }()
	o.waitRound(t)
	kick(t, c)
	o.waitRound(t) // the first round is over
	cancel()
	<-done
	freed, failed, _ := o.counts()
	if _, err := os.Stat(res); err != nil || len(e.dels()) > 0 || freed+failed > 0 {
		t.Errorf("a reservation of network net, which 20-net.conflist names with disableGC, was DELed: DELs %q, freed %d, failed %d, file: %v",
			e.dels(), freed, failed, err)
	}
}

// Observer.ReservationWouldFree and podsweeper_cni_reservations_would_free_total:
// a dry run tells each reservation it would free once, even when a round
// between frees nothing (the runtime failed then).
func TestWouldFreeIsToldOnceForEach(t *testing.T) {
	e := newEnv(t)
	data := filepath.Join(t.TempDir(), "networks")
	e.hostLocalConflist("10-net.conflist", "net", data, "")
	e.reservation(data, "net", "10.22.0.5", "cafe0001", time.Now().Add(-time.Hour))
	o := newReservationObserver()
	rt := steppedRuntime{answers: make(chan error)}
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: data,
		ResyncInterval: time.Hour, Runtime: rt, DryRun: true, Observer: o, Logger: testcni.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, &fakeTracker{tracked: map[string]ports.PU{}}) }()
	defer func() { cancel(); <-done }()
	rt.answer(t, nil) // round 1's sweep: told
	kick(t, c)
	rt.answer(t, nil)                               // round 2's list
	rt.answer(t, errors.New("runtime unavailable")) // round 2's sweep: would free nothing
	kick(t, c)
	rt.answer(t, nil) // round 3's list
	rt.answer(t, nil) // round 3's sweep (which begins once round 2's is over): would free it again
	for deadline := time.Now().Add(30 * time.Second); len(c.WouldFree()) != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("WouldFree: %v 30s after round 3's sweep, want the one reservation", c.WouldFree())
		}
	}
	if _, _, would := o.counts(); would != 1 {
		t.Errorf("ReservationWouldFree told %d times of one reservation that never changed, want once", would)
	}
	if len(e.dels()) > 0 {
		t.Errorf("a dry run DELed: %q", e.dels())
	}
}
