package contracts_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// docs/sdk/cni-freeing.md:80 (row 16): "or may (a FIFO, a device, a directory, ... there) | keep". A named pipe in the
// network's directory named as no address: host-local's DEL reads it (and waits for a writer) while it walks the
// directory for the container's files. The collector DELs the network's reservation; the DEL hangs until its
// one-minute bound. The round is stopped after 3s: the DEL, hanging on the pipe, is cut short.
func TestReservationFIFONamedNoAddressHangsDEL(t *testing.T) {
	e := realEnv(t)
	e.writeConf("10-net1.conflist", realHostLocalConf("net1", e.data))
	e.writeReservation(e.data, "net1", "10.9.0.7", "deadcontainer", "eth0", time.Hour)
	must(t, unix.Mkfifo(filepath.Join(e.data, "net1", "zz-pipe"), 0o600))
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.PluginDirs = []string{realPlugins}
	c, err := cni.New(o)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_ = c.Resync(ctx, testcni.NopTracker{})
	st := testcni.Address(t, c, "10.9.0.7").Reservations
	_, gone := os.Stat(filepath.Join(e.data, "net1", "10.9.0.7"))
	if len(st) != 1 || st[0].Decision.Verdict == "free" || gone != nil {
		t.Fatalf("a named pipe is in the network's directory (row 16: keep); the round decided %+v, the file is gone (%v), its DEL stopped after %v",
			st, gone, time.Since(start))
	}
}
