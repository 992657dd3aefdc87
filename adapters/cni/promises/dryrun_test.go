package promises_test

// DryRunDestroyPU (ports.DryRunner) answers as DestroyPU would, on every row
// of the freeing decision, and runs no DEL.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// errClass names what a DestroyPU answer tells the engine: nil, or its sentinel, and whether it is permanent.
func errClass(err error) string {
	if err == nil {
		return "nil"
	}
	class := "plain"
	for _, s := range []error{cni.ErrSandboxRunning, cni.ErrNewestSandbox, cni.ErrOrderUnknown, cni.ErrNoEvidence, cni.ErrUnusableEntry} {
		if errors.Is(err, s) {
			class = s.Error()
			break
		}
	}
	if ports.IsPermanent(err) {
		class += " (permanent)"
	}
	return class
}

// ports.DryRunner, and the Collector's DryRunDestroyPU doc: it answers as
// DestroyPU would, through the same decision, and changes nothing. Each case
// is a row of decide's table (docs/sdk/cni-freeing.md); the dry run is asked
// twice (the second answers as the first), then DestroyPU, which must answer
// the same. A row reached by a refusal's time is reached after a DestroyPU
// and after a DryRunDestroyPU alike: the dry run records its refusals as
// DestroyPU does, so that a dry run reports what the real run frees then.
func TestDryRunDestroyPUAnswersAsDestroyPUOnEveryRow(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name string
		row  int
		// setup writes the node and returns the Runtime (nil: none) and the event.
		setup func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent)
		// before: DestroyPU is called once before, and time passes (a refusal recorded).
		before bool
		want   string
	}{
		{name: "sandbox change, only a disableGC network cached", row: 0, want: "nil",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old, func(m map[string]any) {
					m["config"] = []byte(`{"cniVersion":"1.0.0","name":"net1","disableGC":true,"plugins":[{"type":"fakeplugin"}]}`)
				})
				rt.set(sb("sbA", "uid1", false, old))
				return rt, changed("uid1", "sbA")
			}},
		{name: "gone pod, listed ready", row: 1, want: cni.ErrSandboxRunning.Error(),
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old)
				rt.set(sb("sbA", "uid1", true, old))
				return rt, gone("uid1")
			}},
		{name: "sandbox change, listed ready", row: 1, want: cni.ErrNewestSandbox.Error(),
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				rt.set(sb("sbA", "uid1", true, old))
				return rt, changed("uid1", "sbA")
			}},
		{name: "gone pod, another sandbox listed ready", row: 2, want: cni.ErrSandboxRunning.Error(),
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old)
				rt.set(sb("sbB", "uid1", true, time.Now()))
				return rt, gone("uid1")
			}},
		{name: "gone pod, listed ready without an ID", row: 2, want: cni.ErrSandboxRunning.Error(),
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old)
				rt.set(sb("", "uid1", true, time.Now()))
				return rt, gone("uid1")
			}},
		{name: "listed stopped", row: 3, want: "nil",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				rt.set(sb("sbA", "uid1", false, old))
				return rt, gone("uid1")
			}},
		{name: "not listed, namespace gone", row: 4, want: "nil",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old)
				return rt, gone("uid1")
			}},
		{name: "no runtime, namespace there", row: 5, want: cni.ErrNoEvidence.Error(),
			setup: func(e *env, _ *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				return nil, gone("uid1")
			}},
		{name: "no runtime, one namespace gone, one there", row: 4, want: cni.ErrNoEvidence.Error(),
			setup: func(e *env, _ *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old) // row 4: freed
				e.write("net1", "sbB", "uid1", e.netns("b", true), old)  // row 5: kept, no evidence
				return nil, gone("uid1")
			}},
		{name: "sandbox change, a later sandbox cached", row: 6, want: "nil",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				e.write("net1", "sbB", "uid1", e.netns("b", true), time.Now())
				rt.set(sb("sbB", "uid1", true, time.Now()))
				return rt, changed("uid1", "sbA")
			}},
		{name: "sandbox change, its place not told yet", row: 7, want: cni.ErrNewestSandbox.Error(),
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				return rt, changed("uid1", "sbA")
			}},
		{name: "sandbox change, refused for NewestSandboxTimeout", row: 8, before: true, want: cni.ErrOrderUnknown.Error() + " (permanent)",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				return rt, changed("uid1", "sbA")
			}},
		{name: "gone pod, may be being created", row: 9, want: cni.ErrSandboxRunning.Error(),
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				return rt, gone("uid1")
			}},
		{name: "gone pod, may be being created, refused for NewestSandboxTimeout", row: 10, before: true, want: "nil",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", true), old)
				return rt, gone("uid1")
			}},
		{name: "gone pod, not listed, namespace tells nothing", row: 11, want: "nil",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", "", old)
				return rt, gone("uid1")
			}},
		{name: "gone pod, freed beside an unusable entry of it", row: 4, want: cni.ErrUnusableEntry.Error() + " (permanent)",
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old)
				writeFile(t, filepath.Join(e.cache, "results"), "net2-sbA-eth0", `[]`) // whole, and not libcni's
				return rt, gone("uid1")
			}},
		{name: "gone pod, freed beside an entry of it being written", row: 4, want: cni.ErrUnusableEntry.Error(),
			setup: func(e *env, rt *fakeRuntime) (cni.Runtime, ports.DestroyEvent) {
				e.write("net1", "sbA", "uid1", e.netns("a", false), old)
				writeFile(t, filepath.Join(e.cache, "results"), "net2-sbA-eth0", `{"kind":"cniCacheV1","containerId":"sbA",`) // cut short
				return rt, gone("uid1")
			}},
	} {
		firsts := []string{""}
		if tc.before {
			firsts = []string{"after DestroyPU", "after DryRunDestroyPU"}
		}
		for _, first := range firsts {
			// prepare writes the node of tc, and calls first (a refusal recorded, and its time past).
			prepare := func(t *testing.T) (*env, *cni.Collector, ports.DestroyEvent) {
				e := newEnv(t)
				rt, ev := tc.setup(e, &fakeRuntime{})
				timeout := time.Hour
				if tc.before {
					timeout = time.Millisecond
				}
				c := e.collector(rt, timeout)
				switch first {
				case "after DestroyPU":
					_ = c.DestroyPU(context.Background(), ev)
				case "after DryRunDestroyPU":
					_ = c.DryRunDestroyPU(context.Background(), ev)
				}
				if tc.before {
					time.Sleep(10 * time.Millisecond)
				}
				return e, c, ev
			}
			t.Run(strings.TrimSpace(tc.name+" "+first), func(t *testing.T) {
				e, c, ev := prepare(t)
				entries := cacheFiles(t, e)
				dels := len(e.dels())
				var dry ports.DryRunner = c
				for i := range 2 {
					if got := errClass(dry.DryRunDestroyPU(context.Background(), ev)); got != tc.want {
						t.Fatalf("row %d: DryRunDestroyPU (call %d) answered %s, want %s", tc.row, i+1, got, tc.want)
					}
				}
				if n := len(e.dels()); n != dels || !slices.Equal(cacheFiles(t, e), entries) {
					t.Fatalf("row %d: DryRunDestroyPU ran %d DEL, or changed the cache", tc.row, n-dels)
				}
				if got := errClass(c.DestroyPU(context.Background(), ev)); got != tc.want {
					t.Fatalf("row %d: DestroyPU answered %s, DryRunDestroyPU %s", tc.row, got, tc.want)
				}
				if frees := tc.row == 3 || tc.row == 4 || tc.row == 6 || tc.row == 10 || tc.row == 11; frees != (len(e.dels()) > dels) {
					t.Fatalf("row %d: DestroyPU ran %d DEL", tc.row, len(e.dels())-dels)
				}
			})
			// With an ended context, each answers what the other does: DestroyPU's DELs fail, beside what it keeps.
			t.Run(strings.TrimSpace(tc.name+" "+first+" ended context"), func(t *testing.T) {
				ended, cancel := context.WithCancel(context.Background())
				cancel()
				answers := make([]error, 2)
				for i := range answers {
					_, c, ev := prepare(t)
					if i == 0 {
						answers[i] = c.DryRunDestroyPU(ended, ev)
					} else {
						answers[i] = c.DestroyPU(ended, ev)
					}
				}
				dry, real := answers[0], answers[1]
				if errClass(dry) != errClass(real) || errors.Is(dry, context.Canceled) != errors.Is(real, context.Canceled) {
					t.Fatalf("row %d, an ended context: DryRunDestroyPU answered %q (%s), DestroyPU %q (%s)", tc.row, dry, errClass(dry), real, errClass(real))
				}
			})
		}
	}
}

// cacheFiles lists the cache's entries.
func cacheFiles(t *testing.T, e *env) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(e.cache, "results"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}
