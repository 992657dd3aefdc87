package deletion

// The destroy rate's line (rateline.go), alone: turns in arrival order, a turn not used passes to the next in line,
// and the rate's bound.

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const sec = int64(time.Second)

func TestTheRateLineGrantsTurnsInArrivalOrder(t *testing.T) {
	l := newRateLine(sec, 1)
	ok, _ := l.take("a", 0)
	assert.True(t, ok, "the burst is at hand")
	for _, p := range []string{"b", "c", "d"} {
		ok, _ := l.take(p, 0)
		assert.False(t, ok, "%s waits", p)
	}
	ok, _ = l.take("c", sec)
	assert.False(t, ok, "c is behind b when the turn comes")
	ok, _ = l.take("d", sec)
	assert.False(t, ok, "d is behind b and c")
	ok, _ = l.take("b", sec)
	assert.True(t, ok, "b is first in line")
	assert.Len(t, l.tickets, 2)
}

func TestATurnNotUsedPassesToTheNextInLineNotToALaterArrival(t *testing.T) {
	l := newRateLine(1300*int64(time.Millisecond), 1)
	l.take("a", 0)
	_, atB := l.take("b", 0)
	_, atC := l.take("c", 0)
	_, atD := l.take("d", 0)
	assert.Equal(t, []int64{1300e6, 2600e6, 3900e6}, []int64{atB, atC, atD}, "each waits behind those before it")

	head, ok := l.leave("b") // b's pod is alive: its turn goes unused
	assert.True(t, ok)
	assert.Equal(t, "c", head, "c is first in line now")
	assert.Equal(t, 1300*int64(time.Millisecond), l.turnAt(0, 1000e6), "the turn b left is c's")

	ok, _ = l.take("d", 1500e6)
	assert.False(t, ok, "d, triggered with a turn at hand, does not take c's")
	ok, _ = l.take("c", 1500e6)
	assert.True(t, ok)
	ok, at := l.take("d", 1500e6)
	assert.False(t, ok, "one turn per 1.3s")
	assert.Equal(t, 2800*int64(time.Millisecond), at)
}

func TestAPUKeepsItsTicketThroughATrigger(t *testing.T) {
	l := newRateLine(sec, 1)
	l.take("a", 0)
	l.take("b", 0)
	l.take("c", 0)
	for range 3 { // triggers of c: each asks again, none moves it
		ok, at := l.take("c", sec/2)
		assert.False(t, ok)
		assert.Equal(t, 2*sec, at, "c keeps its place behind b")
	}
}

func TestTheRateLineLetsABurstThroughAtOnce(t *testing.T) {
	l := newRateLine(sec, 3)
	for _, p := range []string{"a", "b", "c"} {
		ok, _ := l.take(p, 0)
		assert.True(t, ok, "%s is within the burst", p)
	}
	ok, at := l.take("d", 0)
	assert.False(t, ok)
	assert.Equal(t, sec, at)
}

func TestTheRateLineHoldsTheRatesBound(t *testing.T) {
	// Turns asked for every 10ms by 50 PUs in turn, for 20s: at most rate*w + burst in any window w.
	l := newRateLine(sec/4, 2)
	var starts []int64
	for now := int64(0); now < 20*sec; now += sec / 100 {
		for p := range 50 {
			if ok, _ := l.take(string(rune('A'+p)), now); ok {
				starts = append(starts, now)
			}
		}
	}
	for i := range starts {
		for j := i; j < len(starts); j++ {
			w := starts[j] - starts[i]
			assert.LessOrEqual(t, j-i+1, int(w/(sec/4))+2, "turns %d to %d within %v", i, j, time.Duration(w))
		}
	}
	assert.GreaterOrEqual(t, len(starts), 80, "the line keeps the pace")
}

func TestALineWithoutALimitGrantsEveryTurn(t *testing.T) {
	var l rateLine
	for range 100 {
		ok, _ := l.take("a", 0)
		assert.True(t, ok)
	}
	assert.Empty(t, l.tickets, "no PU holds a ticket")
}

func TestABurstOfMoreThanAYearOfTurnsDoesNotOverflow(t *testing.T) {
	l := newRateLine(sec, math.MaxInt)
	ok, _ := l.take("a", 0)
	assert.True(t, ok, "a huge burst lets the first through")
	assert.Positive(t, l.tau)
}

func TestAPUThatLeftTheLineIsAheadOfNoOne(t *testing.T) {
	l := newRateLine(sec, 1)
	l.take("a", 0)
	for _, p := range []string{"b", "c", "d", "e"} {
		l.take(p, 0)
	}
	l.leave("c") // untracked, in the middle of the line
	_, at := l.take("e", 0)
	assert.Equal(t, 3*sec, at, "b and d are ahead of e, c no longer")
	_, at = l.take("d", 0)
	assert.Equal(t, 2*sec, at, "b is ahead of d")
}

func TestTheRateLineCountsThePUsAheadExactly(t *testing.T) {
	// Against a plain count, through joins, leaves, turns taken and the line's compaction.
	l := newRateLine(sec, 2)
	var order []string // those in line, in arrival order
	now := int64(0)
	for i := range 20000 {
		p := string(rune('a' + i%3000))
		switch i % 7 {
		case 3, 5: // leaves, wherever it is
			l.leave(p)
			order = slicesDelete(order, p)
		default:
			in := slicesIndex(order, p) >= 0
			if !in {
				order = append(order, p)
			}
			if want := slicesIndex(order, p); in && want >= 2 {
				assert.Equal(t, want, l.ahead(l.tickets[p]), "ahead of %s at step %d", p, i)
			}
			if ok, _ := l.take(p, now); ok {
				order = slicesDelete(order, p)
			}
		}
		if i%500 == 0 {
			now += sec
		}
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func slicesDelete(s []string, v string) []string {
	if i := slicesIndex(s, v); i >= 0 {
		return append(s[:i], s[i+1:]...)
	}
	return s
}
