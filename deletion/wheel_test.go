package deletion

// The scheduler's wheel (schedule.go), alone: when a record comes due.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func newWheel(interval time.Duration) *wheel {
	phases := phasesOf(interval)
	return &wheel{tick: interval / time.Duration(phases), phases: int32(phases), kick: make(chan struct{}, 1)}
}

func TestARecordComesDueAtTheTickOfItsPhaseOnceAnInterval(t *testing.T) {
	w := newWheel(5 * time.Second) // ten ticks of 500ms
	r := &record{heapIndex: -1, phase: 3}
	w.schedule(r, 1)
	assert.Equal(t, int64(3*500*time.Millisecond)+1, r.next, "its phase's tick")
	assert.Nil(t, w.popDue(r.next-1), "not before")
	assert.Same(t, r, w.popDue(r.next))
	w.schedule(r, r.next)
	assert.Equal(t, int64(13*500*time.Millisecond)+1, r.next, "an interval later")
}

func TestARetryComesDueAtItsTimeAndATurnAtTheSoonerOfItsTurnAndItsTick(t *testing.T) {
	w := newWheel(5 * time.Second)
	retry := &record{heapIndex: -1, phase: 0, waitFor: retrying, waitUntil: int64(7 * time.Second)}
	w.schedule(retry, 1)
	assert.Equal(t, int64(7*time.Second), retry.next, "a retry waits for its time, past its tick")
	turn := &record{heapIndex: -1, phase: 9, waitFor: turnWaiting, waitUntil: int64(time.Second)}
	w.schedule(turn, 1)
	assert.Equal(t, int64(time.Second), turn.next, "a turn before its tick")
	assert.Equal(t, int64(time.Second), w.first())
	w.unschedule(turn)
	assert.Equal(t, int64(7*time.Second), w.first(), "unscheduled")
}

func TestTheWheelIsKickedForARecordDueBeforeItsWakeUp(t *testing.T) {
	w := newWheel(5 * time.Second)
	w.wakeAt = int64(4 * time.Second)
	w.schedule(&record{heapIndex: -1, phase: 1}, 1)
	select {
	case <-w.kick:
	default:
		t.Fatal("the scheduler sleeps past a record due sooner")
	}
}

func TestARetryIsRoundedUpToATick(t *testing.T) {
	w := newWheel(5 * time.Second)
	assert.Equal(t, int64(500*time.Millisecond)+1, w.onTick(2))
	assert.Equal(t, int64(500*time.Millisecond)+1, w.onTick(int64(500*time.Millisecond)+1))
}
