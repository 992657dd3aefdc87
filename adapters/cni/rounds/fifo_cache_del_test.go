package rounds_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// A named pipe that appears in libcni's cache under the name of a
// reservation's attachment (<network>-<containerID>-<ifName>) after the
// round read the cache: the reservation's DEL (libcni's DelNetworkList reads
// its cached result) blocks on the pipe for good, past its one-minute bound,
// and Resync never returns once its ctx ends.
func TestAuditResyncReturnsWhenCtxEndsFIFOInCache(t *testing.T) {
	pd := testcni.PluginsDir(t)
	e := newEnv(t)
	write(t, filepath.Join(e.conf, "10-net.conf"), strings.ReplaceAll(hlConf, "DATA", e.data), 0)
	write(t, filepath.Join(e.data, "net", "10.22.0.5"), "gone\r\neth0", time.Hour)
	fifo := filepath.Join(e.cache, "results", "net-gone-eth0")
	made := make(chan struct{})
	rt := &testcni.Runtime{}
	rt.Hook = func(n int) {
		if n == 1 { // the round read the cache already
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Error(err)
			}
			close(made)
		}
	}
	t.Cleanup(func() { // unblock a reader left behind
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: rt, ReservationGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Resync(ctx, testcni.NopTracker{}) }()
	select {
	case <-made:
	case <-time.After(5 * time.Second):
		t.Fatal("setup: the round never listed the runtime")
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Resync: %v", err)
		}
	case <-time.After(5 * time.Second):
		st, _ := page(t, c, "10.22.0.5")
		t.Fatalf("Resync did not return within 5s of its ctx's end: the round's DEL reads the named pipe %s (page: state %q)", fifo, st.Reservations[0].State)
	}
}
