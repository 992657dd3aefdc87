package meanwhile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// swapPlugin, first in net1's chain: at each DEL it moves the files of <root>/swap into ConfDir, as a CNI installer
// rewriting the network's config while the round runs.
const swapPlugin = `#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  cat >/dev/null
  echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'
  exit 0
fi
cat >/dev/null
d="$(dirname "$0")/.."
for f in "$d"/swap/*; do [ -e "$f" ] && mv "$f" "$d/net.d/"; done
exit 0
`

func hostLocalPlugin(dataDir string) string {
	return `{"type":"host-local","ipam":{"type":"host-local","dataDir":"` + dataDir + `","ranges":[[{"subnet":"10.9.0.0/24"}]]}}`
}

// namedMidRound sets up net1, whose chain runs swap then host-local in e.data, with two dead containers' reservations
// there (a, then b), and a config that also runs host-local in a second data directory, data3, moved into ConfDir by
// the first DEL of the round (fromStart: in ConfDir from the start). It returns a, b and data3's net1 directory.
func namedMidRound(t *testing.T, fromStart bool) (e env, a, b, data3 string) {
	e = newEnv(t, "")
	root := filepath.Dir(e.data)
	hl, err := os.ReadFile(filepath.Join(testcni.PluginsDir(t), "host-local"))
	if err != nil {
		t.Fatal(err)
	}
	testcni.WriteFile(t, filepath.Join(e.plugins, "host-local"), hl, 0o755, time.Time{})
	testcni.WriteFile(t, filepath.Join(e.plugins, "swap"), []byte(swapPlugin), 0o755, time.Time{})
	data3 = filepath.Join(root, "data3", "net1")
	if err := os.MkdirAll(data3, 0o755); err != nil {
		t.Fatal(err)
	}
	both := `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"swap"},` + hostLocalPlugin(e.data) + `,` + hostLocalPlugin(filepath.Dir(data3)) + `]}`
	first := `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"swap"},` + hostLocalPlugin(e.data) + `]}`
	if fromStart {
		first = both
	} else {
		testcni.Write(t, filepath.Join(root, "swap", "10-net1.conflist"), both)
	}
	testcni.Write(t, filepath.Join(e.conf, "10-net1.conflist"), first)
	a, b = filepath.Join(e.data, "net1", "10.9.0.5"), filepath.Join(e.data, "net1", "10.9.0.6")
	reserve(t, a, "resva001\r\neth0")
	reserve(t, b, "resvb002\r\neth0")
	return e, a, b, data3
}

// linkTo makes in dir a link named as an address to a file elsewhere naming container resvb002 and eth0: host-local's
// DEL of that container, walking dir, would remove it.
func linkTo(t *testing.T, dir string) string {
	target := filepath.Join(filepath.Dir(filepath.Dir(dir)), "elsewhere")
	reserve(t, target, "resvb002\r\neth0")
	link := filepath.Join(dir, "10.9.0.77")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// cni-freeing.md, row 16: a reservation is kept when "host-local's DEL of it would remove a file the collector never
// touches (a link ...)", and every DEL is decided on what is read right before it. ConfDir is rewritten while the
// round runs (by its first DEL) to run host-local in a second data directory too, whose link names the second
// reservation's container: the round has not read that directory, and keeps the reservation (row 16) rather than DEL
// it unread; a round that reads it keeps it too, and the link stays.
func TestALinkInADataDirectoryNamedMidRoundIsNeverTouched(t *testing.T) {
	for _, fromStart := range []bool{false, true} {
		e, a, b, data3 := namedMidRound(t, fromStart)
		link := linkTo(t, data3)
		c := e.collector(t, func(o *cni.Options) { o.ResyncInterval = 200 * time.Millisecond })
		resyncUntil(t, c, 3*time.Second, func() bool { return !testcni.Exists(a) && rowOf(t, c, "10.9.0.6") == 16 })
		if testcni.Exists(a) || !testcni.Exists(link) || !testcni.Exists(b) {
			t.Errorf("data directory named from the start: %v: want the first reservation freed, the second kept by the link (row 16: %d), the link there; a there %v, b there %v, link there %v",
				fromStart, rowOf(t, c, "10.9.0.6"), testcni.Exists(a), testcni.Exists(b), testcni.Exists(link))
		}
	}
}

// Options.ReservationRate: "the rate's bound over a second holds while a single DEL may free more than the burst".
// The second data directory, named while the round runs, holds 5 reservations of the second container: a DEL of it
// decided on the new config and run unread freed all 6 on one turn. They are freed once a round has read them, each
// on a turn of its own.
func TestTheRateHoldsWhenADataDirectoryIsNamedMidRound(t *testing.T) {
	e, a, b, data3 := namedMidRound(t, false)
	files := []string{a, b}
	for i := range 5 {
		p := filepath.Join(data3, fmt.Sprintf("10.9.0.%d", 100+i))
		reserve(t, p, "resvb002\r\neth0")
		files = append(files, p)
	}
	c := e.collector(t, func(o *cni.Options) {
		o.ReservationRate, o.ReservationBurst, o.ResyncInterval = 1, 1, 200*time.Millisecond
	})
	start := time.Now()
	var took time.Duration
	resyncUntil(t, c, 20*time.Second, func() bool {
		for _, p := range files {
			if testcni.Exists(p) {
				return false
			}
		}
		took = time.Since(start)
		return true
	})
	if took == 0 {
		t.Fatalf("not all 7 reservations freed in 20s")
	}
	if bound := 1 + took.Seconds(); float64(len(files)) > bound+0.5 {
		t.Fatalf("%d reservations freed in %v under a rate of 1 a second and a burst of 1 (bound %.1f)", len(files), took, bound)
	}
}
