package contracts_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// docs/sdk/ports.md:18-23: "a DestroyPU that succeeds past the deadline has destroyed the PU ... (a failure past the
// deadline is retried, whatever it says); the lateness is a failure of the check (EventChecked's Err)".
func TestHoldsLateDestroy(t *testing.T) {
	for _, permanentLate := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			var mu sync.Mutex
			var kinds []deletion.EventKind
			var checkedErr error
			obs := deletion.ObserverFunc(func(ev deletion.Event) {
				mu.Lock()
				defer mu.Unlock()
				kinds = append(kinds, ev.Kind)
				if ev.Kind == deletion.EventChecked {
					checkedErr = ev.Err
				}
			})
			pol := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
				time.Sleep(2 * time.Second) // ignores its deadline of 1s
				if permanentLate {
					return ports.Permanent(context.DeadlineExceeded)
				}
				return nil
			})
			e, err := deletion.New(w.getter(), pol, deletion.Options{CheckTimeout: time.Second, Observer: obs, Logger: discard()})
			if err != nil {
				t.Fatal(err)
			}
			_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a")})
			e.Sweep(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if permanentLate {
				if e.Len() != 1 || checkedErr == nil {
					t.Fatalf("a late permanent failure: len %d, events %v", e.Len(), kinds)
				}
				return
			}
			if e.Len() != 0 || checkedErr == nil {
				t.Fatalf("a late success: len %d, EventChecked Err %v, events %v", e.Len(), checkedErr, kinds)
			}
		})
	}
}
