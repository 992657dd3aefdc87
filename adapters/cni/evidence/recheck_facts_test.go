package evidence_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// docs/sdk/cni-freeing.md, row 16 and "Every DEL of a reservation is decided on what is read right before it": a
// file host-local's DEL would remove that the collector never touches (a link naming the container, in the
// network's directory), a cache entry of another network naming the container, or the network's directory made a
// link (through which no DEL releases), each made after the round read them and before the reservation's DEL, keeps
// the reservation: they are read again right before the DEL.
func TestRowSixteensFactsAreReadAgainRightBeforeTheDEL(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, e env) (kept string)
	}{
		{"a link naming the container in the network's directory", func(t *testing.T, e env) string {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, []byte("c1\r\neth0"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(e.data, "net1", "keep-me")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
		{"the network's directory made a link", func(t *testing.T, e env) string {
			moved := filepath.Join(t.TempDir(), "net1")
			if err := os.Rename(filepath.Join(e.data, "net1"), moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, filepath.Join(e.data, "net1")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(moved, "10.0.0.2")
		}},
		{"a cache entry of another network", func(t *testing.T, e env) string {
			return e.entry(t, hostLocalConf("other", filepath.Join(t.TempDir(), "other"), "10.9.0.0/24", false),
				"other", "c1", "eth1", "", "u1", "ns", "p", `{"cniVersion":"1.0.0","ips":[{"address":"10.9.0.5/24"}]}`, time.Now())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.writeConf(t, "10-net1.conflist", hostLocalConf("net1", e.data, "10.0.0.0/24", false))
			old := time.Now().Add(-time.Hour)
			e.reserve(t, "net1", "10.0.0.1", "c0", "eth0", old)
			p := e.reserve(t, "net1", "10.0.0.2", "c1", "eth0", old)
			var kept string
			rt := &fakeRuntime{list: func(n int) ([]*runtimeapi.PodSandbox, error) {
				if n == 2 { // asked again right before the DEL of 10.0.0.2, once 10.0.0.1's ran
					kept = tc.make(t, e)
				}
				return nil, nil
			}}
			c, err := cni.New(e.opts(rt))
			if err != nil {
				t.Fatal(err)
			}
			first := filepath.Join(e.data, "net1", "10.0.0.1")
			runRound(t, c, func() bool {
				rt.mu.Lock()
				n := rt.calls
				rt.mu.Unlock()
				return !testcni.Exists(first) && n >= 2 && roundOver(c, "10.0.0.2")
			})
			if _, err := os.Lstat(kept); err != nil {
				t.Errorf("%s, made right before the DEL, was removed: %v", kept, err)
			}
			if !testcni.Exists(p) {
				t.Errorf("the reservation was freed: page says %+v", address(c, "10.0.0.2").Reservations)
			}
			if st := address(c, "10.0.0.2"); len(st.Reservations) != 1 || st.Reservations[0].State != cni.ReservationKeptOnRecheck {
				t.Errorf("the page tells %+v; want it kept on recheck", st.Reservations)
			}
		})
	}
}
