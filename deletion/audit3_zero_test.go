package deletion_test

import (
	"context"
	"errors"
	"testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// deletion: ErrNotCreated, ErrNilContext (go doc): a zero Engine fails Track and Start, the others do nothing; Start(nil) fails.
func TestAuditHoldsZeroEngineAndNilContext(t *testing.T) {
	var e deletion.Engine
	if err := e.Track(ports.PU{PUID: "x", Pod: nsKey("a")}); !errors.Is(err, deletion.ErrNotCreated) {
		t.Errorf("Track %v", err)
	}
	if err := e.Start(context.Background()); !errors.Is(err, deletion.ErrNotCreated) {
		t.Errorf("Start %v", err)
	}
	e.Untrack("x")
	e.TriggerAll()
	e.TriggerPod(nsKey("a"))
	e.Sweep(context.Background())
	t.Log(e.Len(), e.Status(), e.Backlog(), e.Classify(nil), e.LivenessCheck(nil), e.ReadinessCheck(nil))
	//lint:ignore SA1012 a nil context, on purpose
	if err := e.Start(nil); !errors.Is(err, deletion.ErrNilContext) {
		t.Errorf("Start(nil) %v", err)
	}
}
