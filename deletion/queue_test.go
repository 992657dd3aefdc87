package deletion

// The record's transition table (queue.go), move by move, on a queue alone:
// every state a move starts from, and the state it leads to.

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

func TestTheRecordsTransitionTable(t *testing.T) {
	q := newQueue(t, Options{})
	n := 0
	// in returns a new record in state s (waiting for s when s is a wait).
	in := func(s state) *record {
		n++
		pu := ports.PU{PUID: string(rune('a' + n)), Pod: types.NamespacedName{Namespace: "ns", Name: "p"}}
		now := q.now()
		r, _ := q.newRecordLocked(pu, now) // Track's move, under the lock held here
		if s != tracking {
			q.announceLocked(r, now) // its EventTracked told
		}
		switch s {
		case retrying, turnWaiting:
			q.setWaitLocked(r, s, now+1e12) // due in 1000s
			r.state = s
		case queued:
			q.queueLocked(r, byTime, now)
		case checking:
			q.queueLocked(r, byTime, now)
			q.claimLocked(r, &q.ready.slots[q.ready.free[len(q.ready.free)-1]])
			q.ready.free = q.ready.free[:len(q.ready.free)-1]
		}
		require.Equal(t, s, r.state)
		return r
	}
	release := func(r *record, o outcome) {
		o.end = q.now()
		q.releaseLocked(r, r2slot(q, r), &o)
	}
	failed := outcome{err: errors.New("GetPod failed"), verdict: Verdict{Row: 2}}
	for _, tc := range []struct {
		name     string
		from     state
		move     func(r *record)
		to       state
		waitsFor state
	}{
		{"a new record is checked by no one until its EventTracked is told", tracking, func(r *record) {
			assert.Equal(t, int32(-1), r.heapIndex, "off the heap")
			q.queueLocked(r, byTime, q.now())
		}, tracking, idle},
		{"a trigger while the Observer is told of a new record checks it once told", tracking, func(r *record) {
			q.queueLocked(r, byTrigger, q.now())
			assert.Equal(t, tracking, r.state)
			q.announceLocked(r, q.now())
		}, queued, idle},
		{"a new record told of becomes idle on the heap", tracking, func(r *record) {
			q.announceLocked(r, q.now())
			assert.GreaterOrEqual(t, r.heapIndex, int32(0), "on the heap")
		}, idle, idle},
		{"Untrack removes a record the Observer is being told of", tracking, func(r *record) {
			q.removeLocked(r, false)
			q.announceLocked(r, q.now()) // Track's announce after: nothing
		}, removed, idle},
		{"the scheduler queues an idle record", idle, func(r *record) { q.queueLocked(r, byTime, q.now()) }, queued, idle},
		{"a trigger queues an idle record", idle, func(r *record) { q.queueLocked(r, byTrigger, q.now()) }, queued, idle},
		{"a trigger leaves a retry waiting", retrying, func(r *record) { q.queueLocked(r, byTrigger, q.now()) }, retrying, retrying},
		{"a Sweep queues a retry early", retrying, func(r *record) { q.queueLocked(r, bySweep, q.now()) }, queued, retrying},
		{"a trigger queues a record waiting for its turn", turnWaiting, func(r *record) { q.queueLocked(r, byTrigger, q.now()) }, queued, turnWaiting},
		{"a queued record is queued once", queued, func(r *record) { q.queueLocked(r, byTrigger, q.now()) }, queued, idle},
		{"a trigger during a check checks again after", checking, func(r *record) {
			q.queueLocked(r, byTrigger, q.now())
			release(r, outcome{verdict: Verdict{Row: 9}})
		}, queued, idle},
		{"the scheduler does not queue a record being checked", checking, func(r *record) {
			q.queueLocked(r, byTime, q.now())
			release(r, outcome{verdict: Verdict{Row: 9}})
		}, idle, idle},
		{"a claim takes a queued record", queued, func(r *record) {
			q.claimLocked(r, &q.ready.slots[q.ready.free[len(q.ready.free)-1]])
			q.ready.free = q.ready.free[:len(q.ready.free)-1]
		}, checking, idle},
		{"a retry a Sweep now over queued goes back to waiting", retrying, func(r *record) {
			q.queueLocked(r, bySweep, q.now())
			assert.False(t, q.dueLocked(r, q.now()))
		}, retrying, retrying},
		{"a check that keeps the PU leaves it idle", checking, func(r *record) { release(r, outcome{verdict: Verdict{Row: 9}}) }, idle, idle},
		{"a failed destroy waits for its retry", checking, func(r *record) {
			release(r, outcome{verdict: Verdict{Action: Destroy, Row: 1}, retryAt: q.now() + 1e9})
		}, retrying, retrying},
		{"a destroy without a turn at hand waits for it", checking, func(r *record) {
			release(r, outcome{verdict: Verdict{Action: Destroy, Row: 1}, turnAt: q.now() + 1e9})
		}, turnWaiting, turnWaiting},
		{"a check that learns nothing keeps a turn's place", turnWaiting, func(r *record) {
			q.queueLocked(r, byTrigger, q.now())
			q.claimLocked(r, &q.ready.slots[q.ready.free[len(q.ready.free)-1]])
			q.ready.free = q.ready.free[:len(q.ready.free)-1]
			release(r, failed)
		}, turnWaiting, turnWaiting},
		{"a record seen alive leaves the line", turnWaiting, func(r *record) {
			q.queueLocked(r, byTrigger, q.now())
			q.claimLocked(r, &q.ready.slots[q.ready.free[len(q.ready.free)-1]])
			q.ready.free = q.ready.free[:len(q.ready.free)-1]
			release(r, outcome{verdict: Verdict{Row: 9}})
		}, idle, idle},
		{"Untrack removes an idle record", idle, func(r *record) { q.removeLocked(r, false) }, removed, idle},
		{"Untrack removes a retry", retrying, func(r *record) { q.removeLocked(r, false) }, removed, idle},
		{"Untrack removes a queued record", queued, func(r *record) { q.removeLocked(r, false) }, removed, idle},
		{"Untrack removes a record being checked", checking, func(r *record) { q.removeLocked(r, false) }, removed, idle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q.mu.Lock()
			defer q.mu.Unlock()
			r := in(tc.from)
			tc.move(r)
			assert.Equal(t, tc.to, r.state, "state")
			assert.Equal(t, tc.waitsFor, r.waitFor, "what it waits for")
			if tc.to == removed {
				assert.Nil(t, q.records[r.PUID])
				assert.Equal(t, int32(-1), r.heapIndex, "off the heap")
			} else if tc.to != queued && tc.to != checking && tc.to != tracking {
				assert.GreaterOrEqual(t, r.heapIndex, int32(0), "on the heap")
			}
		})
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, s := range []state{retrying, turnWaiting} {
		n := 0
		for _, r := range q.records {
			if r.waitFor == s {
				n++
			}
		}
		assert.Equal(t, n, q.waits[s], "records counted waiting for %v", s)
	}
}

// r2slot returns the slot that holds r's check.
func r2slot(q *puQueue, r *record) *slot {
	for i := range q.ready.slots {
		if q.ready.slots[i].held == r {
			return &q.ready.slots[i]
		}
	}
	panic("no slot holds " + r.PUID)
}

// newQueue returns a queue of an engine with opts, alone, on a clock that moves a nanosecond a reading.
func newQueue(t *testing.T, opts Options) *puQueue {
	t.Helper()
	o, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var clock int64
	now := func() int64 { clock++; return clock }
	q := &puQueue{}
	q.init(o, now, now)
	return q
}
