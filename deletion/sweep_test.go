package deletion

// The Sweep's part of the queue (sweep.go), on a queue alone: what a Sweep waits for, and when it is over.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// sweepQueue returns a queue tracking n announced records.
func sweepQueue(t *testing.T, n int) (*puQueue, []*record) {
	q := newQueue(t, Options{Workers: 2})
	var rs []*record
	for i := range n {
		r, _ := q.newRecordLocked(ports.PU{PUID: string(rune('a' + i)), Pod: types.NamespacedName{Namespace: "ns", Name: "p"}}, q.now())
		q.announceLocked(r, q.now())
		rs = append(rs, r)
	}
	return q, rs
}

// checkOnce claims r, as a worker does, and releases it with o.
func checkOnce(q *puQueue, r *record, o outcome) (sweep uint32) {
	s := &q.ready.slots[q.ready.free[len(q.ready.free)-1]]
	q.ready.free = q.ready.free[:len(q.ready.free)-1]
	q.claimLocked(r, s)
	o.end = q.now()
	return q.releaseLocked(r, s, &o)
}

func TestASweepWaitsForOneCheckOfEveryRecord(t *testing.T) {
	q, rs := sweepQueue(t, 3)
	gen, done, _ := q.beginSweepLocked(q.now())
	require.NotZero(t, gen)
	assert.Equal(t, 3, q.sweep.left)
	for i, r := range rs {
		assert.Equal(t, queued, r.state, "a Sweep queues every record")
		if sweep := checkOnce(q, r, outcome{verdict: Verdict{Row: 9}}); sweep != 0 {
			q.sweptLocked()
		}
		assert.Equal(t, 2-i, q.sweep.left)
	}
	select {
	case <-done:
	default:
		t.Fatal("the Sweep is not over once every record was checked")
	}
}

func TestARecordRemovedDuringASweepIsNoLongerWaitedFor(t *testing.T) {
	q, rs := sweepQueue(t, 2)
	_, done, _ := q.beginSweepLocked(q.now())
	q.removeLocked(rs[0], false) // Untrack
	assert.Equal(t, 1, q.sweep.left)
	if sweep := checkOnce(q, rs[1], outcome{verdict: Verdict{Row: 9}}); sweep != 0 {
		q.sweptLocked()
	}
	select {
	case <-done:
	default:
		t.Fatal("the Sweep waits for a removed record")
	}
}

func TestASweepWaitsForTheTurnOfADestroyItsCheckDecided(t *testing.T) {
	q, rs := sweepQueue(t, 1)
	gen, done, _ := q.beginSweepLocked(q.now())
	turn := q.now() + 1e9
	assert.Zero(t, checkOnce(q, rs[0], outcome{verdict: Verdict{Action: Destroy, Row: 1}, turnAt: turn}),
		"a check whose destroy waits for its turn is not the Sweep's last")
	assert.Equal(t, sweepTurn, rs[0].sweep)
	assert.Equal(t, 1, q.sweep.left)
	assert.Greater(t, q.sweepTurnsLocked(gen), time.Duration(0), "the Sweep wakes at the turn")
	select {
	case <-done:
		t.Fatal("the Sweep ended before the turn")
	default:
	}
}

func TestASweepWithNothingTrackedDoesNotBegin(t *testing.T) {
	q := newQueue(t, Options{})
	gen, done, _ := q.beginSweepLocked(q.now())
	assert.Zero(t, gen)
	assert.Nil(t, done)
}
