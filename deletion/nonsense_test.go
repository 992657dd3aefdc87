package deletion_test

// Ports are other people's code: a port that returns nonsense (a typed-nil
// error, an error that cannot be read or is too large to read, a nil pod,
// another pod, an answer past its deadline) fails, and a failing port keeps
// the PU (GetPod) or is retried (DestroyPU, Inventory).

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// typedNil is the common Go mistake: a nil *url.Error returned as an error,
// which is not a nil error, and whose Error and Unwrap dereference nil.
func typedNil() error {
	var e *url.Error
	return e
}

// TestAPortReturningATypedNilErrorFailsAndKeepsThePU: each port in turn
// returns a typed-nil error; the check counts it as a failure of that port
// (EventGetFailed, EventDestroyFailed, or a PU kept), keeps the PU, and
// the process goes on, whether a Sweep or Start runs the check.
func TestAPortReturningATypedNilErrorFailsAndKeepsThePU(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	gone := getterOf(nil, ports.ErrPodNotFound)
	live := getterOf(podAt(key, "web"), nil)
	broken := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, typedNil() })
	for _, tc := range []struct {
		port   string
		getter ports.PodGetter
		opts   func(*deletion.Options)
		policy ports.PolicyHandler
		event  deletion.EventKind
	}{
		{port: "GetPod", getter: broken, event: deletion.EventGetFailed},
		{port: "Confirmer", getter: gone, opts: func(o *deletion.Options) { o.Confirmer = broken }, event: deletion.EventVetoed},
		{port: "DestroyPU", getter: gone, event: deletion.EventDestroyFailed,
			policy: ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return typedNil() })},
		{port: "SandboxID", getter: live, event: deletion.EventChecked, opts: func(o *deletion.Options) {
			o.SandboxExtractor = ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "", typedNil() })
		}},
		{port: "SandboxDead", getter: live, event: deletion.EventChecked, opts: func(o *deletion.Options) {
			o.SandboxExtractor = ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "", nil })
			o.SandboxProber = ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return true, typedNil() })
		}},
	} {
		for _, runner := range []string{"Sweep", "Start"} {
			t.Run(tc.port+"/"+runner, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rec := &deletiontest.Events{}
					policy := tc.policy
					if policy == nil {
						policy = newDestroyLog()
					}
					opts := deletion.Options{Observer: rec, NodeName: testNode, SweepInterval: time.Hour}
					if tc.opts != nil {
						tc.opts(&opts)
					}
					opts.Logger = (&logBuffer{}).logger() // it reads the errors it logs
					c := deletiontest.NewEngine(t, tc.getter, policy, opts)
					require.NoError(t, c.Track(ports.PU{PUID: "web", Pod: key, SandboxID: "s1"}))
					if runner == "Sweep" {
						c.Sweep(context.Background())
					} else {
						deletiontest.Start(t, c)
						c.TriggerAll()
					}
					synctest.Wait()
					require.Equal(t, 1, c.Len(), "the PU is kept")
					require.NotEmpty(t, rec.Of(tc.event), "the check ended with %v", tc.event)
					s := c.Status()[0]
					if tc.event != deletion.EventChecked || tc.port == "SandboxID" || tc.port == "SandboxDead" {
						require.Error(t, s.LastErr)
						assert.NotPanics(t, func() { _ = s.LastErr.Error() }, "the error kept is one that can be read")
						assert.Contains(t, s.LastErr.Error(), tc.port)
					}
				})
			})
		}
	}
}

// TestAnInventoryReturningATypedNilErrorIsRetried: a list that answers a
// typed-nil error failed: it is retried, and its next answer is restored.
func TestAnInventoryReturningATypedNilErrorIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := types.NamespacedName{Namespace: "ns", Name: "web"}
		calls := 0
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			if calls++; calls == 1 {
				return nil, typedNil()
			}
			return []ports.PU{{PUID: "web", Pod: key}}, nil
		})
		c := deletiontest.NewEngine(t, getterOf(podAt(key, "web"), nil), newDestroyLog(), deletion.Options{Inventory: inv, RetryMinDelay: time.Second,
			Logger: (&logBuffer{}).logger()})
		deletiontest.Start(t, c)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, calls)
		assert.Equal(t, 1, c.Len(), "the second list is restored")
	})
}

type ptrErr struct{ s string }

func (e *ptrErr) Error() string        { return e.s }
func (e *ptrErr) Is(target error) bool { return target == ports.ErrPodNotFound }

type mapErr map[string]string

func (mapErr) Error() string        { return "map" }
func (mapErr) Is(target error) bool { return target == ports.ErrPodNotFound }
func (m mapErr) Unwrap() error      { return ports.ErrPodNotFound }

type sliceErr []error

func (s sliceErr) Error() string   { return s[0].Error() } // panics when nil
func (s sliceErr) Unwrap() []error { return []error{ports.ErrPodNotFound} }

type funcErr func() string

func (f funcErr) Error() string      { return f() }
func (funcErr) Is(target error) bool { return target == ports.ErrPodNotFound }

type wrapPerm struct{ inner error }

func (w wrapPerm) Error() string { return "wrapped" }
func (w wrapPerm) Unwrap() error { return w.inner }

// docs/sdk/ports.md:16-18: "treats a port that hangs, fails or answers nonsense (a nil pod, another pod, a typed-nil
// error) as a failure that keeps the PU". GetPod answers nonsense; a Sweep must destroy nothing.
func TestAuditHoldsGetPodNonsenseKeepsThePU(t *testing.T) {
	typedNils := map[string]error{
		"nil pointer Is NotFound":   (*ptrErr)(nil),
		"nil map Unwrap NotFound":   mapErr(nil),
		"nil slice, reading panics": sliceErr(nil),
		"nil func, reading panics":  funcErr(nil),
		"wrapped nil pointer":       fmt.Errorf("x: %w", (*ptrErr)(nil)),
		"joined with a typed nil":   errors.Join(ports.ErrPodNotFound, (*ptrErr)(nil)),
		"permanent typed nil":       ports.Permanent((*ptrErr)(nil)),
	}
	answers := map[string]func(key types.NamespacedName) (*corev1.Pod, error){
		"nil pod": func(types.NamespacedName) (*corev1.Pod, error) { return nil, nil },
		"other pod": func(types.NamespacedName) (*corev1.Pod, error) {
			return deletiontest.Pod(key("other"), "uid-x", "node-a"), nil
		},
		"no uid": func(k types.NamespacedName) (*corev1.Pod, error) { return deletiontest.Pod(k, "", "node-a"), nil },
		"panic NotFound": func(types.NamespacedName) (*corev1.Pod, error) {
			panic(ports.ErrPodNotFound)
		},
		"pod and typed nil": func(k types.NamespacedName) (*corev1.Pod, error) {
			return nil, mapErr(nil)
		},
	}
	for name, e := range typedNils {
		answers[name] = func(types.NamespacedName) (*corev1.Pod, error) { return nil, e }
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			policy := &deletiontest.Policy{}
			getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) { return answer(k) })
			engine := deletiontest.NewEngine(t, getter, policy, deletion.Options{NodeName: "node-a"})
			if err := engine.Track(ports.PU{PUID: "uid-1", Pod: key("web-0")}); err != nil {
				t.Fatal(err)
			}
			engine.Sweep(context.Background())
			if policy.CallCount() != 0 || engine.Len() != 1 {
				t.Errorf("%d destroys, %d tracked; want 0 and 1", policy.CallCount(), engine.Len())
			}
		})
	}
}

// ports.PolicyHandler.DestroyPU: "An error wrapped with Permanent is not retried; any other error, one that cannot be
// read (a typed nil) too, is retried with backoff."
func TestAuditHoldsDestroyPUTypedNilIsRetried(t *testing.T) {
	for name, e := range map[string]error{
		"nil pointer":              (*ptrErr)(nil),
		"nil map":                  mapErr(nil),
		"nil slice":                sliceErr(nil),
		"nil func":                 funcErr(nil),
		"permanent nil ptr":        ports.Permanent((*ptrErr)(nil)),
		"wrapper of permanent nil": wrapPerm{ports.Permanent(mapErr(nil))},
	} {
		t.Run(name, func(t *testing.T) {
			cluster := deletiontest.NewCluster()
			policy := &deletiontest.Policy{}
			engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{})
			pu := cluster.CreatePod(key("web-0"), "node-a", "")
			_ = engine.Track(pu)
			cluster.DeletePod(pu.Pod)
			policy.FailNext(1, e)
			engine.Sweep(context.Background())
			if engine.Len() != 1 {
				t.Fatalf("dropped after a typed-nil DestroyPU error")
			}
			engine.Sweep(context.Background())
			if engine.Len() != 0 || policy.Count(pu.PUID) != 2 {
				t.Errorf("retry: %d calls, %d tracked", policy.Count(pu.PUID), engine.Len())
			}
		})
	}
	// A readable wrapper of Permanent gives up at once.
	cluster := deletiontest.NewCluster()
	policy := &deletiontest.Policy{}
	engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{})
	pu := cluster.CreatePod(key("web-0"), "node-a", "")
	_ = engine.Track(pu)
	cluster.DeletePod(pu.Pod)
	policy.FailNext(1, wrapPerm{ports.Permanent(errors.New("no such PU"))})
	engine.Sweep(context.Background())
	if engine.Len() != 0 || policy.Count(pu.PUID) != 1 {
		t.Errorf("permanent: %d calls, %d tracked", policy.Count(pu.PUID), engine.Len())
	}
}

type nilMapErr map[string]string

func (m nilMapErr) Error() string        { return "map error" }
func (m nilMapErr) Is(target error) bool { return target == ports.ErrPodNotFound }

type nilSliceErr []error

func (s nilSliceErr) Error() string   { return "slice error" }
func (s nilSliceErr) Unwrap() []error { return []error{ports.ErrPodNotFound} }

type ptrErr2 struct{ msg string }

func (p *ptrErr2) Error() string { return p.msg }
func (p *ptrErr2) Unwrap() error { return ports.ErrPodNotFound }

// Ports answering nonsense keep the PU: typed-nil errors of every kind, matching ErrPodNotFound or not, wrapped or
// joined, a nil pod, another pod, a panic with ErrPodNotFound.
func TestAuditHoldsNonsenseFromGetPodKeepsThePU(t *testing.T) {
	answers := map[string]func() (*corev1.Pod, error){
		"nil map error":          func() (*corev1.Pod, error) { return nil, nilMapErr(nil) },
		"nil func error":         func() (*corev1.Pod, error) { return nil, funcErr(nil) },
		"nil slice error":        func() (*corev1.Pod, error) { return nil, nilSliceErr(nil) },
		"nil pointer error":      func() (*corev1.Pod, error) { return nil, (*ptrErr2)(nil) },
		"wrapped nil pointer":    func() (*corev1.Pod, error) { return nil, fmt.Errorf("x: %w", (*ptrErr2)(nil)) },
		"joined with a nil":      func() (*corev1.Pod, error) { return nil, errors.Join(ports.ErrPodNotFound, nilMapErr(nil)) },
		"nil pod, nil error":     func() (*corev1.Pod, error) { return nil, nil },
		"another pod":            func() (*corev1.Pod, error) { return deletiontest.Pod(nsKey("other"), "uid-x", "node-a"), nil },
		"pod without a UID":      func() (*corev1.Pod, error) { return deletiontest.Pod(nsKey("web"), "", "node-a"), nil },
		"panic with not found":   func() (*corev1.Pod, error) { panic(ports.ErrPodNotFound) },
		"pod and typed-nil err":  func() (*corev1.Pod, error) { return nil, nilSliceErr(nil) },
		"nameless pod other UID": func() (*corev1.Pod, error) { return deletiontest.Pod(types.NamespacedName{}, "uid-x", ""), nil },
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return answer() })
				policy := &deletiontest.Policy{}
				events := &deletiontest.Events{}
				engine := deletiontest.NewEngine(t, getter, policy, deletion.Options{NodeName: "node-a", Observer: events})
				if err := engine.Track(ports.PU{PUID: "uid-1", Pod: nsKey("web")}); err != nil {
					t.Fatal(err)
				}
				engine.Sweep(t.Context())
				deletiontest.Start(t, engine)
				deletiontest.Advance(time.Minute)
				if policy.CallCount() != 0 || engine.Len() != 1 || events.Count(deletion.EventGetFailed) == 0 {
					t.Errorf("%d destroys, %d tracked, %d EventGetFailed", policy.CallCount(), engine.Len(), events.Count(deletion.EventGetFailed))
				}
			})
		})
	}
}

// DestroyPU: Permanent of a typed nil is retried; Permanent of a real error gives up at once; a panic with a
// Permanent error is retried.
func TestAuditHoldsDestroyPUNonsense(t *testing.T) {
	for name, tc := range map[string]struct {
		err      func() error
		abandons bool
	}{
		"permanent typed nil": {func() error { return ports.Permanent((*ptrErr2)(nil)) }, false},
		"permanent":           {func() error { return ports.Permanent(errors.New("no such PU")) }, true},
		"panic permanent":     {func() error { panic(ports.Permanent(errors.New("x"))) }, false},
		"typed nil":           {func() error { return nilMapErr(nil) }, false},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cluster := deletiontest.NewCluster()
				policy := &deletiontest.Policy{}
				policy.SetAnswer(func(context.Context, ports.DestroyEvent) error { return tc.err() })
				events := &deletiontest.Events{}
				engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{Observer: events})
				pu := cluster.CreatePod(nsKey("web"), "node-a", "")
				if err := engine.Track(pu); err != nil {
					t.Fatal(err)
				}
				cluster.DeletePod(pu.Pod)
				engine.Sweep(t.Context())
				if got := events.Count(deletion.EventAbandoned) == 1; got != tc.abandons {
					t.Errorf("abandoned %v, want %v (%d tracked)", got, tc.abandons, engine.Len())
				}
			})
		})
	}
}

// docs/sdk/ports.md:16-18: "The engine calls every port under a deadline (Options.CheckTimeout), recovers its panics,
// and treats a port that hangs, fails or answers nonsense ... as a failure that keeps the PU". Options.CheckTimeout:
// "the deadline of one check, destroy included". DestroyPU hangs past the deadline, ignoring its context, then
// answers a permanent error: the engine gives the PU up instead of keeping it.
func TestAuditDestroyPUAnswerPastTheDeadlineKeepsThePU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		events := &deletiontest.Events{}
		policy.SetAnswer(func(ctx context.Context, ev ports.DestroyEvent) error {
			time.Sleep(10 * time.Second) // ignores ctx
			return ports.Permanent(errors.New("policy engine: no such PU"))
		})
		engine := deletiontest.NewEngine(t, cluster, policy, deletion.Options{CheckTimeout: time.Second, Observer: events})
		pu := cluster.CreatePod(key("a"), "node-a", "")
		_ = engine.Track(pu)
		cluster.DeletePod(pu.Pod)
		deletiontest.Start(t, engine)
		engine.TriggerPod(pu.Pod)
		deletiontest.Advance(11 * time.Second)
		if n := events.Count(deletion.EventAbandoned); n != 0 || engine.Len() != 1 {
			t.Errorf("DestroyPU answered 9s past its 1s deadline: %d abandoned, %d tracked; want the late answer taken "+
				"as a failure that keeps the PU", n, engine.Len())
		}
		policy.SetAnswer(nil)
		deletiontest.Advance(time.Minute)
	})
}

// fanErr is a readable error (no typed nil, nothing panics) whose Unwrap() []error answers the same child twice, 60
// levels deep: 60 values that a walk of the error tree visits 2^60 times. off cuts every Unwrap short, so that the
// test leaves no goroutine spinning behind it.
type fanErr struct {
	off   *atomic.Bool
	child *fanErr
}

func (e *fanErr) Error() string { return "fan-out error" }
func (e *fanErr) Unwrap() []error {
	if e.child == nil || e.off.Load() {
		return nil
	}
	return []error{e.child, e.child}
}

func newFanErr(depth int, off *atomic.Bool) error {
	var e *fanErr
	for range depth {
		e = &fanErr{off: off, child: e}
	}
	return e
}

// docs/sdk/ports.md:16-18: "The engine calls every port under a deadline (`Options.CheckTimeout`), recovers its
// panics, and treats a port that hangs, fails or answers nonsense (a nil pod, another pod, a typed-nil error) as a
// failure that keeps the PU: a check that learned nothing destroys nothing." docs/sdk/engine.md:17-18: "Ports that
// fail or panic cannot lose a PU". ports/values.go:135-140 (go doc ports.Readable): "through Unwrap() error and
// Unwrap() []error, at most 64 deep".
//
// GetPod answers once, at once, with an error whose Unwrap() []error forms a DAG (errors.Join(e, e), nested): the
// engine's reading of it (ports.Readable, then errors.Is) walks it as a tree, 2^60 nodes, past every deadline and
// forever. The check never ends: its worker spins on a core, the PU stays "checking", and when GetPod later answers
// that the pod is gone, no Sweep checks it again: the PU is never destroyed.
//
// Not under testing/synctest: a goroutine that spins is never durably blocked, so a bubble's fake clock would never
// move; the test runs on real time, about 2.5 s.
func TestAuditNonsenseErrorIsAFailureThatKeepsThePU(t *testing.T) {
	off := &atomic.Bool{}
	t.Cleanup(func() { off.Store(true) }) // lets the stuck check end once the test is over
	cluster := deletiontest.NewCluster()
	pol := &deletiontest.Policy{}
	var nonsense atomic.Bool
	nonsense.Store(true)
	getter := ports.PodGetterFunc(func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
		if nonsense.Load() {
			return nil, newFanErr(60, off)
		}
		return cluster.GetPod(ctx, k)
	})
	e := deletiontest.NewEngine(t, getter, pol, deletion.Options{CheckTimeout: 100 * time.Millisecond})
	pu := cluster.CreatePod(nsKey("a"), "", "")
	if err := e.Track(pu); err != nil {
		t.Fatal(err)
	}
	sweep := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		e.Sweep(ctx)
	}
	sweep() // the nonsense answer: returns once the check is a second past its deadline

	nonsense.Store(false)
	cluster.DeletePod(pu.Pod) // GetPod now answers: not found
	sweep()

	if e.Len() != 0 || pol.CallCount() != 1 {
		t.Errorf("after a nonsense answer and then the pod's deletion: %d PU(s) tracked (state %q), %d DestroyPU call(s); "+
			"want the nonsense answer taken as a failure, then the PU destroyed", e.Len(), e.Status()[0].State, pol.CallCount())
	}
}

// detailErr is an error whose reading panics (its detail was never set) and whose Is says "not found".
type detailErr struct{ detail *string }

func (e detailErr) Error() string        { return "not found: " + *e.detail }
func (e detailErr) Is(target error) bool { return target == ports.ErrPodNotFound }

// opaqueWrap wraps an error without reading it.
type opaqueWrap struct{ inner error }

func (w opaqueWrap) Error() string { return "get pod failed" }
func (w opaqueWrap) Unwrap() error { return w.inner }

// Promise (go doc ports.Readable): "Readable reports whether a port's error can be read: err is nil, or it and every
// error it wraps ... are neither a nil pointer, map, slice, func or chan held in the interface (a typed nil) nor panic
// when asked Error or Unwrap. An error that cannot be read says nothing the engine may act on, whatever its Is, As and
// Unwrap answer: the engine takes it as a plain failure, so that it keeps the PU (GetPod) or retries (DestroyPU)".
// docs/sdk/ports.md:16-18: a port that "answers nonsense ... [is] a failure that keeps the PU".
//
// An error that wraps one whose Error panics is taken as readable; its wrapped Is says "not found", and the engine
// destroys the PU of a pod that GetPod never said was gone.
func TestAuditUnreadableWrappedErrorKeepsPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := opaqueWrap{inner: detailErr{}}
		if ports.Readable(bad) {
			t.Errorf("ports.Readable(%T wrapping an error whose Error panics) = true, want false", bad)
		}
		if deletion.IsNotFound(bad) {
			t.Errorf("deletion.IsNotFound(unreadable error) = true, want false")
		}

		p := uidPU("web")
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, opaqueWrap{inner: detailErr{}}
		})
		policy := &deletiontest.Policy{}
		e := deletiontest.NewEngine(t, getter, policy, deletion.Options{})
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background())
		if n := policy.CallCount(); n != 0 || e.Len() != 1 {
			t.Errorf("GetPod answered an unreadable error: DestroyPU called %d times (%v), tracked %d; want the PU kept", n, policy.Calls(), e.Len())
		}
	})
}

// Same root, DestroyPU's side (go doc ports.PolicyHandler.DestroyPU: "any other error, one that cannot be read (a
// typed nil) too, is retried with backoff"; ports.IsPermanent: "An error that cannot be read (Readable is false) is
// not").
func TestAuditUnreadablePermanentIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := ports.Permanent(opaqueWrap{inner: detailErr{}})
		if ports.IsPermanent(bad) {
			t.Errorf("ports.IsPermanent(Permanent(wrapping an error whose Error panics)) = true, want false")
		}
		cluster := deletiontest.NewCluster()
		policy := &deletiontest.Policy{}
		policy.FailNext(1, bad)
		e := deletiontest.NewEngine(t, cluster, policy, deletion.Options{})
		p := cluster.CreatePod(nsKey("web"), "node-a", "")
		if err := e.Track(p); err != nil {
			t.Fatal(err)
		}
		cluster.DeletePod(p.Pod)
		e.Sweep(context.Background())
		if e.Len() != 1 {
			t.Errorf("DestroyPU answered an unreadable error: the PU was given up on (tracked %d), want it kept for a retry", e.Len())
		}
	})
}

// lookupError's methods read no field: a nil *lookupError answers them
// without a panic, and says it is ports.ErrPodNotFound.
type lookupError struct{}

func (*lookupError) Error() string        { return "lookup failed" }
func (*lookupError) Is(target error) bool { return target == ports.ErrPodNotFound }

// Typed nils of the other kinds that may implement error, whose methods
// answer as lookupError's do.
type (
	notFoundMap   map[string]string
	notFoundSlice []string
	notFoundFunc  func()
	notFoundChan  chan struct{}
)

func (notFoundMap) Error() string          { return "lookup failed (map)" }
func (notFoundMap) Is(target error) bool   { return target == ports.ErrPodNotFound }
func (notFoundSlice) Error() string        { return "lookup failed (slice)" }
func (notFoundSlice) Is(target error) bool { return target == ports.ErrPodNotFound }
func (notFoundFunc) Error() string         { return "lookup failed (func)" }
func (notFoundFunc) Is(target error) bool  { return target == ports.ErrPodNotFound }
func (notFoundChan) Error() string         { return "lookup failed (chan)" }
func (notFoundChan) Is(target error) bool  { return target == ports.ErrPodNotFound }

// permanentWrap's methods read no field: a nil *permanentWrap unwraps to a
// permanent error.
type permanentWrap struct{}

func (*permanentWrap) Error() string { return "destroy failed" }
func (*permanentWrap) Unwrap() error { return ports.Permanent(errors.New("x")) }

// TestATypedNilErrorReadThroughItsMethodsKeepsThePU: GetPod answers a typed
// nil of each kind whose methods answer, and say NotFound; a Sweep must keep
// the PU, for an error that cannot be read is a failure.
func TestATypedNilErrorReadThroughItsMethodsKeepsThePU(t *testing.T) {
	for name, err := range map[string]error{
		"pointer": (*lookupError)(nil),
		"map":     notFoundMap(nil),
		"slice":   notFoundSlice(nil),
		"func":    notFoundFunc(nil),
		"chan":    notFoundChan(nil),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				assert.False(t, deletion.IsNotFound(err), "IsNotFound of a typed nil %T", err)
				getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, err })
				policy := &deletiontest.Policy{}
				c := deletiontest.NewEngine(t, getter, policy, deletion.Options{})
				require.NoError(t, c.Track(pu("a")))
				c.Sweep(context.Background())
				assert.Empty(t, policy.Calls(), "DestroyPU was called on a typed nil %T from GetPod", err)
				assert.Equal(t, 1, c.Len(), "the PU is kept")
			})
		})
	}
}

// TestATypedNilDestroyErrorIsRetried: DestroyPU answers a nil
// *permanentWrap, which unwraps to a permanent error: it cannot be read, so
// it is retried (EventDestroyFailed, the PU stays tracked), not given up on.
func TestATypedNilDestroyErrorIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, ports.ErrPodNotFound
		})
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return (*permanentWrap)(nil) })
		events := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Observer: events})
		require.NoError(t, c.Track(pu("a")))
		c.Sweep(context.Background())
		assert.Equal(t, 1, c.Len(), "the PU stays tracked")
		assert.Equal(t, 1, events.Count(deletion.EventDestroyFailed))
		assert.Zero(t, events.Count(deletion.EventAbandoned), "a typed nil is no permanent error")
	})
}

// TestAnErrorTreeTooLargeToReadIsAFailure: an error whose Unwrap() []error
// repeats a child, nested deep (errors.Join(e, e) 60 times: 2^60 errors to
// walk), is a failure that keeps the PU, read in bounded time.
func TestAnErrorTreeTooLargeToReadIsAFailure(t *testing.T) {
	err := errors.New("leaf")
	for range 60 {
		err = errors.Join(err, err)
	}
	assert.False(t, ports.Readable(err))
	assert.False(t, deletion.IsNotFound(errors.Join(ports.ErrPodNotFound, err)), "not read, so not NotFound")
	assert.True(t, ports.Readable(errors.Join(errors.New("a"), errors.New("b"))), "a real tree is read")
}

// unprintable is a panic value whose Error panics with itself: fmt, asked
// to print it, panics again.
type unprintable struct{}

func (u unprintable) Error() string { panic(u) }

// TestAPanicWhoseValueCannotBePrintedIsRecovered: GetPod and the Observer
// panic with a value whose printing panics; the engine recovers both (no
// crash of the process), and the Sweep keeps the PU, failing the check with
// ErrPortPanicked.
func TestAPanicWhoseValueCannotBePrintedIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { panic(unprintable{}) })
		events := &deletiontest.Events{}
		observer := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked {
				panic(unprintable{})
			}
		})
		policy := &deletiontest.Policy{}
		c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Observer: deletion.Observers(events, observer)})
		require.NoError(t, c.Track(pu("a")))
		c.Sweep(context.Background())
		assert.Empty(t, policy.Calls())
		assert.Equal(t, 1, c.Len(), "the PU is kept")
		checked := events.Of(deletion.EventChecked)
		require.Len(t, checked, 1)
		assert.ErrorIs(t, checked[0].Err, deletion.ErrPortPanicked)
		assert.Contains(t, checked[0].Err.Error(), "a deletion_test.unprintable that cannot be read", "told by its type")
	})
}

// TestAPanicWithANilValueIsAPanic: under GODEBUG panicnil=1, which Go
// still supports, panic(nil) recovers as nil. A DestroyPU that panics so is
// a failure (the PU is kept and retried), a ListPUs that panics so is a
// failed list (listed again), and Observers raises it again. The test runs
// itself again with that setting.
func TestAPanicWithANilValueIsAPanic(t *testing.T) {
	if os.Getenv("GODEBUG") != "panicnil=1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAPanicWithANilValueIsAPanic$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "GODEBUG=panicnil=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "under GODEBUG panicnil=1:\n%s", out)
		require.Contains(t, string(out), "--- PASS: TestAPanicWithANilValueIsAPanic/DestroyPU", "the subtests ran")
		return
	}
	t.Run("DestroyPU", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
			policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { panic(nil) })
			events := &deletiontest.Events{}
			c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Observer: events})
			require.NoError(t, c.Track(pu("a")))
			c.Sweep(context.Background())
			assert.Zero(t, events.Count(deletion.EventDestroyed), "a DestroyPU that panicked destroyed nothing")
			assert.Equal(t, 1, c.Len(), "the PU is kept, to be retried")
		})
	})
	t.Run("ListPUs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
			lists := 0
			inventory := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
				if lists++; lists == 1 {
					panic(nil)
				}
				return []ports.PU{pu("gone")}, nil
			})
			policy := &deletiontest.Policy{}
			events := &deletiontest.Events{}
			c := deletiontest.NewEngine(t, getter, policy, deletion.Options{Inventory: inventory, Observer: events})
			deletiontest.Start(t, c)
			deletiontest.Advance(time.Minute)
			assert.Equal(t, 1, events.Count(deletion.EventListFailed), "the list that panicked failed")
			assert.Equal(t, 1, policy.Count("gone"), "the next list restored the PU, and it was destroyed")
		})
	})
	t.Run("Observers", func(t *testing.T) {
		told, raised := 0, true
		obs := deletion.Observers(deletion.ObserverFunc(func(deletion.Event) { panic(nil) }), deletion.ObserverFunc(func(deletion.Event) { told++ }))
		func() {
			defer func() { _ = recover() }()
			obs.Observe(deletion.Event{Kind: deletion.EventTracked})
			raised = false
		}()
		assert.Equal(t, 1, told, "the second Observer is told")
		assert.True(t, raised, "the first Observer's panic is raised again")
	})
}

// readOnceError is an error ports.Readable reads fine, whose Error panics
// from its second reading on: one that holds a buffer its port released.
type readOnceError struct{ reads atomic.Int32 }

func (e *readOnceError) Error() string {
	if e.reads.Add(1) > 1 {
		var released *[]byte
		return string(*released)
	}
	return "journal busy"
}

// TestAPortErrorIsReadOnce: docs/sdk/ports.md: the engine "recovers its
// panics, and treats a port that ... answers nonsense ... as a failure";
// Options.Inventory: "A failing or late list is retried with backoff until
// it answers". The engine reads a port's error once, at its boundary, and
// keeps that reading: an error whose reading panics the second time is a
// failure of the port, whatever reads it after (a V(1) log line, the
// second failing list's), and the process goes on: the list is retried
// until it answers, and GetPod's failure keeps the PU.
func TestAPortErrorIsReadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lists atomic.Int32
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			if lists.Add(1) <= 3 {
				return nil, &readOnceError{}
			}
			return nil, nil
		})
		get := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, &readOnceError{}
		})
		logs := &logBuffer{}
		policy := newDestroyLog()
		c := deletiontest.NewEngine(t, get, policy, deletion.Options{SweepInterval: time.Second, CheckTimeout: time.Second,
			RetryMinDelay: time.Second, Inventory: inv, Logger: logs.logger()})
		require.NoError(t, c.Track(pu("p")))
		deletiontest.Start(t, c)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.GreaterOrEqual(t, lists.Load(), int32(4), "the list is retried until it answers")
		assert.Equal(t, 1, c.Len(), "GetPod's failure keeps the PU")
		assert.Empty(t, policy.CallsOf("p"))
		assert.Contains(t, logs.String(), "ListPUs returned an error that cannot be read", "a failure of the port, named")
	})
}

// greedyErr is a transient error of someone else's whose As answers true for
// every target without setting it: it was never marked with ports.Permanent.
type greedyErr struct{}

func (greedyErr) Error() string { return "policy engine restarting" }
func (greedyErr) As(any) bool   { return true }

// ports.IsPermanent: "whether err, or any error it wraps, was marked with
// Permanent"; ports.PolicyHandler: "any other error ... is retried with
// backoff". An error whose As claims every target, setting none, is no
// Permanent: its destroy is retried, and the PU destroyed at the second call.
func TestAnErrorWhoseAsClaimsEveryTargetIsNotPermanent(t *testing.T) {
	require.False(t, ports.IsPermanent(greedyErr{}))
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
			calls++
			if calls == 1 {
				return greedyErr{}
			}
			return nil
		})
		evs := &deletiontest.Events{}
		c := deletiontest.NewEngine(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{Observer: evs})
		require.NoError(t, c.Track(ports.PU{PUID: "u1", Pod: nsKey("a")}))
		deletiontest.Start(t, c)
		deletiontest.Advance(30 * time.Second)
		require.Empty(t, evs.Of(deletion.EventAbandoned), "a transient error abandoned the PU")
		require.Len(t, evs.Of(deletion.EventDestroyed), 1, "retried after the transient error")
	})
}

// TestAStatusErrorIsReadOnce: deletion.IsNotFound reads err once (ports.Match), and Decide's row 2 never destroys on an
// error. A Kubernetes status error whose readings differ (its reason read, then its code: pmStatusFlip, the model's) is
// told by one reading, which is no NotFound: the PU is kept.
func TestAStatusErrorIsReadOnce(t *testing.T) {
	assert.False(t, deletion.IsNotFound(&pmStatusFlip{}), "a reason and a code of two readings taken for one NotFound")
	policy := &deletiontest.Policy{}
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, &pmStatusFlip{} })
	c := deletiontest.NewEngine(t, getter, policy, deletion.Options{})
	require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: types.NamespacedName{Namespace: "ns", Name: "a"}}))
	c.Sweep(t.Context())
	assert.Zero(t, policy.CallCount(), "a PU destroyed on an error no reading calls not found")
	assert.Equal(t, 1, c.Len())
}
