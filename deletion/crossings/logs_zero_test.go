package crossings_test

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// A fake Clock made at the zero time.Time (clocktesting.NewFakeClock(time.Time{})) would have Status and Backlog
// tell a PU checked at its first instant as never checked, and its failures at that instant could not be told from
// none: New refuses it, with ErrInvalidOptions and what to do (Options.Clock).
func TestAClockAtTheZeroTimeIsRefused(t *testing.T) {
	_, err := deletion.New(newPods(), &deletiontest.Policy{}, deletion.Options{Clock: clocktesting.NewFakeClock(time.Time{})})
	if !errors.Is(err, deletion.ErrInvalidOptions) {
		t.Fatalf("New with a Clock at the zero time: %v, want ErrInvalidOptions", err)
	}
	if _, err := deletion.New(newPods(), &deletiontest.Policy{}, deletion.Options{Clock: clocktesting.NewFakeClock(time.Unix(1, 0))}); err != nil {
		t.Fatalf("New with a Clock at 1970: %v", err)
	}
}
