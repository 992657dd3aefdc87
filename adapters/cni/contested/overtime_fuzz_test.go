package contested_test

import (
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// FuzzGonePodOverTime holds rows 2, 9 and 10 over time, as the engine drives DestroyPU: pod P is gone from the API;
// its sandbox sdead is dead (its network namespace gone), and its other sandbox sother, held in the cache by an
// entry libcni's or only through a link, is at each step listed ready, listed stopped, or not listed, its network
// namespace there or not, while DestroyPU(PodGone, sdead) is asked again after 0 to 155 s. NewestSandboxTimeout is
// a minute. sdead is freed:
//   - never while the runtime lists sother ready (row 2: P runs);
//   - never while sother may be being created (not listed, its namespace there) and has been refused for less than
//     NewestSandboxTimeout since its place was last known (ready, or dead), by the calls that saw it so (row 9);
//   - at the first call where sother is dead, or has been refused so for NewestSandboxTimeout (rows 10 and 4).
func FuzzGonePodOverTime(f *testing.F) {
	f.Add([]byte{0, 8 + 0, 8*12 + 3, 8*12 + 3})      // a link; refused, then a minute on, then more: freed
	f.Add([]byte{1, 8 + 0, 8*12 + 3, 8*12 + 3})      // the same, a cache entry of libcni's
	f.Add([]byte{1, 1, 8*12 + 3, 8*2 + 0, 8*12 + 3}) // listed ready, then not: refused anew
	f.Add([]byte{0, 0, 8*4 + 4, 8 + 3})              // the namespace goes: dead
	f.Add([]byte{1, 2})                              // listed stopped
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) < 2 || len(raw) > 24 {
			return
		}
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t)
			start := time.Now()
			e.writeEntry(t, entry{network: "net1", id: "sdead", uid: "uid-p", ns: "ns", name: "p", ip: "10.1.0.5",
				netns: e.netnsPath(t, "sdead", false), written: start.Add(-time.Hour)})
			if raw[0]&1 == 0 {
				linkedEntry(t, e, "sother", start.Add(-time.Minute))
			} else {
				e.writeEntry(t, entry{network: "net1", id: "sother", uid: "uid-p", ns: "ns", name: "p", ip: "10.1.0.6",
					netns: e.netnsPath(t, "sother", true), written: start.Add(-time.Minute)})
			}
			ns := e.netnsPath(t, "sother", false)
			rt := &fakeRuntime{}
			o := e.opts(rt)
			o.NewestSandboxTimeout = time.Minute
			c, err := cni.New(o)
			if err != nil {
				t.Fatal(err)
			}
			ev := ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: "sdead", Reason: ports.ReasonPodGone}
			listing := byte(0)  // 0: not listed, 1: ready, 2: stopped
			var since time.Time // the first refusal of sother as one being created, since its place was last known
			var trace []string
			for _, b := range raw[1:] {
				if b&3 != 3 {
					listing = b & 3
				}
				if b&4 != 0 { // its network namespace comes or goes
					if _, err := os.Stat(ns); err == nil {
						if err := os.Remove(ns); err != nil {
							t.Fatal(err)
						}
					} else if err := os.WriteFile(ns, nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Duration(b>>3) * 5 * time.Second)
				var sbs []*runtimeapi.PodSandbox
				if listing != 0 {
					sbs = append(sbs, sandbox("sother", "uid-p", listing == 1, start.Add(-time.Minute)))
				}
				rt.set(sbs, nil)
				_, statErr := os.Stat(ns)
				present := statErr == nil
				creating, ready, dead := listing == 0 && present, listing == 1, listing == 2 || listing == 0 && !present
				expired := creating && !since.IsZero() && time.Since(since) >= time.Minute
				err := c.DestroyPU(t.Context(), ev)
				freed := e.delsOf("sdead") > 0
				trace = append(trace, time.Since(start).String()+": "+[...]string{"not listed", "ready", "stopped"}[listing]+
					map[bool]string{true: ", namespace there", false: ", namespace gone"}[present]+" -> "+errString(err))
				switch {
				case freed && ready:
					t.Fatalf("sdead freed while the runtime lists sother ready (row 2): %q", trace)
				case freed && creating && !expired:
					t.Fatalf("sdead freed while sother may be being created, refused for less than NewestSandboxTimeout (row 9): %q", trace)
				case !freed && (dead || expired):
					t.Fatalf("sdead kept though sother is dead or refused for NewestSandboxTimeout (rows 10 and 4): %q", trace)
				case freed:
					return
				}
				switch {
				case ready || dead:
					since = time.Time{}
				case creating && since.IsZero():
					since = time.Now()
				}
			}
		})
	})
}

func errString(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, cni.ErrSandboxRunning):
		return "ErrSandboxRunning"
	}
	return err.Error()
}
