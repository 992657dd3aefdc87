package contracts_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

type ptrErr struct{ msg string }

func (e *ptrErr) Error() string { return e.msg }
func (e *ptrErr) Is(t error) bool {
	return t == ports.ErrPodNotFound
}

type mapErr map[string]string

func (m mapErr) Error() string   { return "map" }
func (m mapErr) Is(t error) bool { return t == ports.ErrPodNotFound }

type sliceErr []error

func (s sliceErr) Error() string   { return "slice" }
func (s sliceErr) Unwrap() []error { return []error{ports.ErrPodNotFound} }

type funcErr func() string

func (f funcErr) Error() string { return "func" }
func (f funcErr) Unwrap() error { return ports.ErrPodNotFound }

type chanErr chan int

func (c chanErr) Error() string { return "chan" }
func (c chanErr) Unwrap() error { return ports.Permanent(errors.New("p")) }

func typedNils() map[string]error {
	return map[string]error{
		"ptr":          (*ptrErr)(nil),
		"map":          mapErr(nil),
		"slice":        sliceErr(nil),
		"func":         funcErr(nil),
		"chan":         chanErr(nil),
		"wrapped-ptr":  errors.Join(errors.New("x"), (*ptrErr)(nil)),
		"permanent-of": ports.Permanent(mapErr(nil)),
	}
}

func TestHoldsTypedNilGetPodAndConfirmerKeep(t *testing.T) {
	for name, bad := range typedNils() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				for _, port := range []string{"get", "confirm"} {
					g := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, bad })
					nf := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
						return nil, ports.ErrPodNotFound
					})
					var e *deletion.Engine
					if port == "get" {
						e = deletiontest.NewEngine(t, g, w.policy(), deletion.Options{NodeName: node})
					} else {
						e = deletiontest.NewEngine(t, nf, w.policy(), deletion.Options{NodeName: node, Confirmer: g})
					}
					_ = e.Track(ports.PU{PUID: "u", Pod: key("a")})
					e.Sweep(context.Background())
					if len(w.destroyed()) != 0 || e.Len() != 1 {
						t.Fatalf("%s: destroyed %v", port, w.destroyed())
					}
				}
			})
		})
	}
}

func TestHoldsTypedNilDestroyRetried(t *testing.T) {
	for name, bad := range typedNils() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				w.destroyErr = func(ports.DestroyEvent) error { return bad }
				e := newEngine(t, w, deletion.Options{})
				_ = e.Track(ports.PU{PUID: "u", Pod: key("a")})
				e.Sweep(context.Background())
				e.Sweep(context.Background())
				if len(w.destroyed()) != 2 || e.Len() != 1 {
					t.Fatalf("destroyed %v len %d", w.destroyed(), e.Len())
				}
			})
		})
	}
}

type dry struct {
	*world
	err error
}

func (d dry) DestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	panic("DestroyPU in a dry run")
}
func (d dry) DryRunDestroyPU(ctx context.Context, ev ports.DestroyEvent) error { return d.err }

func TestHoldsTypedNilDryRunnerNotReported(t *testing.T) {
	for name, bad := range typedNils() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				ev := &deletiontest.Events{}
				e := deletiontest.NewEngine(t, w.getter(), dry{w, bad}, deletion.Options{DryRun: true, Observer: ev})
				_ = e.Track(ports.PU{PUID: "u", Pod: key("a")})
				e.Sweep(context.Background())
				if ev.Count(deletion.EventWouldDestroy) != 0 || e.Len() != 1 {
					t.Fatalf("reported %d, len %d", ev.Count(deletion.EventWouldDestroy), e.Len())
				}
			})
		})
	}
}

func TestHoldsTypedNilSandboxPortsKeep(t *testing.T) {
	for name, bad := range typedNils() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				pr := ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return true, bad })
				x := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "", nil })
				e := newEngine(t, w, deletion.Options{SandboxExtractor: x, SandboxProber: pr})
				_ = e.Track(w.add("a", "uid-a", "s1"))
				e.Sweep(context.Background())
				x2 := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "s9", bad })
				e2 := newEngine(t, w, deletion.Options{SandboxExtractor: x2})
				_ = e2.Track(w.add("a", "uid-a", "s1"))
				e2.Sweep(context.Background())
				if len(w.destroyed()) != 0 {
					t.Fatalf("destroyed %v", w.destroyed())
				}
			})
		})
	}
}

func TestHoldsTypedNilInventoryFails(t *testing.T) {
	for name, bad := range typedNils() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				ev := &deletiontest.Events{}
				inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
					return []ports.PU{{PUID: "u", Pod: key("a")}}, bad
				})
				e := newEngine(t, w, deletion.Options{Inventory: inv, Observer: ev})
				deletiontest.Start(t, e)
				advance(3 * time.Second)
				if e.Len() != 0 || ev.Count(deletion.EventListFailed) == 0 {
					t.Fatalf("len %d events %v", e.Len(), ev.All())
				}
			})
		})
	}
}
