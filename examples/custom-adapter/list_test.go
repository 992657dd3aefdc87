package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/podsweeper/podsweeper/ports"
)

// TestListPUsDoesNotFailOnAPUDestroyedMeanwhile: the engine's checks go on
// while its list is retried, so DestroyPU may remove a state file between
// ListPUs' glob and its read: that file is no PU, not a failure of the
// whole list.
func TestListPUsDoesNotFailOnAPUDestroyedMeanwhile(t *testing.T) {
	s := &StateFiles{Dir: t.TempDir()}
	const n = 400
	for i := range n {
		if err := s.Create(stateOf(fmt.Sprintf("uid-%03d", i)), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := n - 1; i >= 0; i-- { // the end of the glob's order first
			if err := s.DestroyPU(context.Background(), ports.DestroyEvent{
				PUID: fmt.Sprintf("uid-%03d", i), Pod: stateOf("").Pod, Reason: ports.ReasonPodGone,
			}); err != nil {
				t.Error(err)
			}
		}
	})
	var failed error
	for range 200 {
		if _, err := s.ListPUs(context.Background()); err != nil {
			failed = err
			break
		}
	}
	wg.Wait()
	if failed != nil {
		t.Errorf("ListPUs failed while PUs were destroyed: %v", failed)
	}
}
