package k8s

import (
	"time"

	"k8s.io/utils/clock"
)

// WallSteppedClock is the real clock as read by what took its first reading before the wall clock was stepped by
// -by: each Now's wall reading is moved by by, its monotonic reading is time.Now's (wallStepped).
func WallSteppedClock(by time.Duration) clock.WithTicker { return wallSteppedClock{by: by} }

type wallSteppedClock struct {
	clock.RealClock
	by time.Duration
}

func (c wallSteppedClock) Now() time.Time                  { return wallStepped(time.Now(), c.by) }
func (c wallSteppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
