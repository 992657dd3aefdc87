package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// errorLines is a Logger at the default verbosity (V(0)) that keeps its error lines.
type errorLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		if strings.Contains(args, `"error"`) || strings.Contains(args, "\"err\"") {
			l.mu.Lock()
			l.lines = append(l.lines, args)
			l.mu.Unlock()
		}
	}, funcr.Options{Verbosity: 0})
}

func (l *errorLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			out = append(out, x)
		}
	}
	return out
}

// docs/sdk/engine.md:60-67: "Without a Logger, the engine logs through klog ...: an abandoned PU, a panicking port or
// a failing API is never silent. ... each failing port gets one error line per SweepInterval (how many failures, the
// last error and PU; within an interval of the first, even on an engine with nothing else due)". Sweep is the
// engine's pass "for tests and custom schedules" (engine.md:32).
//
// An engine driven by Sweep alone: a first Sweep meets a failing API (its error line is written), a second one, a
// second later, meets a GetPod that panics. No error line ever tells of the panic, at the Sweep's end or an hour on;
// it shows at V(1) only.
func TestAPanickingPortInTheLastSweepIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		panicking := false
		getter := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
			mu.Lock()
			p := panicking
			mu.Unlock()
			if p {
				panic(fmt.Sprintf("nil map in the pod cache reading %s", k))
			}
			return nil, errors.New("connection refused")
		})
		logs := &errorLines{}
		w := newWorld()
		e, err := deletion.New(getter, w.policy(), deletion.Options{NodeName: node, Logger: logs.logger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Track(ports.PU{PUID: "uid-a", Pod: key("a")}); err != nil {
			t.Fatal(err)
		}
		e.Sweep(context.Background())
		if len(logs.matching("connection refused")) == 0 {
			t.Fatalf("the failing API of the first Sweep is not logged: %v", logs.lines)
		}
		time.Sleep(time.Second)
		mu.Lock()
		panicking = true
		mu.Unlock()
		e.Sweep(context.Background())
		time.Sleep(time.Hour)
		if got := logs.matching("panicked"); len(got) == 0 {
			t.Fatalf("GetPod panicked in the last Sweep; no error line tells of it an hour on (error lines: %q)", logs.lines)
		}
	})
}
