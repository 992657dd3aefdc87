package meanwhile_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Collector.Resync (go doc): "It returns when ctx ends (nil)"; doc.go: Resync frees reservations "on a goroutine of
// its own, one round at a time"; hostlocal.go's own rule, cni-freeing.md:45-46: a named pipe "is a file that cannot
// be read" (a FIFO's read waits for a writer, and is never read).
//
// A reservation file that becomes a named pipe while a round waits under ReservationRate is read (opened) right
// before its DEL: the read waits for a writer forever, the round never ends, no later round runs, and Resync does
// not return when its ctx ends.
func TestAuditResyncReturnsWhenReservationBecomesFIFOMidRound(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	conf := `{"cniVersion":"1.0.0","name":"net","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.1.0.0/24"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "10-net.conflist"), conf)
	conf2 := `{"cniVersion":"1.0.0","name":"net2","plugins":[
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"` + e.data + `","ranges":[[{"subnet":"10.2.0.0/24"}]]}}]}`
	testcni.Write(t, filepath.Join(e.conf, "20-net2.conflist"), conf2)
	dir := filepath.Join(e.data, "net")
	reserve(t, filepath.Join(dir, "10.1.0.5"), "aaaa\r\neth0")
	reserve(t, filepath.Join(dir, "10.1.0.6"), "bbbb\r\neth0")
	// In another network: bbbb's DEL (host-local walks its own network's directory) never reads it.
	third := filepath.Join(e.data, "net2", "10.2.0.7")
	reserve(t, third, "cccc\r\neth0")

	o := &obs{}
	c := e.collector(t, func(op *cni.Options) { op.Observer = o; op.ReservationRate = 0.25; op.ReservationBurst = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, testcni.NopTracker{}) }()
	t.Cleanup(func() {
		// Release a read stuck on the pipe, so that the test binary can end.
		if f, err := os.OpenFile(third, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for len(o.freedTimes()) < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(o.freedTimes()) < 1 {
		cancel()
		t.Fatal("precondition: nothing was freed")
	}
	// aaaa is freed; bbbb waits 4s for its turn, cccc after it. Something replaces cccc's file with a named pipe.
	time.Sleep(time.Second)
	if err := os.Remove(third); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(third, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // bbbb's DEL runs; then cccc's file is read
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Resync: %v", err)
		}
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		where := "elsewhere"
		if bytes.Contains(buf, []byte("cni.readReservation")) {
			where = "in cni.readReservation"
		}
		t.Errorf("Resync did not return 10s after its ctx ended: the round is stuck (%s) reading the named pipe %s", where, third)
		// Unblock it, and let it end.
		if f, err := os.OpenFile(third, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
	}
}
