package contracts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// adapters/cni/reservations.go:289-291 (go doc WouldFree): "WouldFree returns the host-local reservations that the
// last resync of a dry run (Options.DryRun) found it would free, in the order of their files".
// Options.ReservationRate (go doc): "the rest wait for their turn, in their round, in the order of their files".
// Read as a walk of the data directory (each directory's names in order, as os.ReadDir lists them), network "n"'s
// files come before "n-a"'s: the order holds (a whole-path sort would put n-a first; dropped as a reading the doc
// does not force).
func TestHoldsWouldFreeInTheOrderOfTheirFiles(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-n.conflist", netConf("n", e.data, false))
	e.writeConf("20-n-a.conflist", netConf("n-a", e.data, false))
	e.writeReservation(e.data, "n", "10.9.0.1", "c1", "eth0", time.Hour)
	e.writeReservation(e.data, "n-a", "10.9.0.2", "c2", "eth0", time.Hour)
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.DryRun = true
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.1", "10.9.0.2")
	var files []string
	for _, r := range c.WouldFree() {
		files = append(files, r.Path())
	}
	if len(files) != 2 {
		t.Fatalf("would free %v", files)
	}
	if !strings.HasSuffix(files[0], "/n/10.9.0.1") {
		t.Fatalf("WouldFree is not in the walk order of the reservations' files: %v", files)
	}
}
