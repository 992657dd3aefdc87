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
	ok, _, _ := l.take("a", 0)
	assert.True(t, ok, "the burst is at hand")
	for _, p := range []string{"b", "c", "d"} {
		ok, _, _ := l.take(p, 0)
		assert.False(t, ok, "%s waits", p)
	}
	ok, _, _ = l.take("c", sec)
	assert.False(t, ok, "c is behind b when the turn comes")
	ok, _, _ = l.take("d", sec)
	assert.False(t, ok, "d is behind b and c")
	ok, _, _ = l.take("b", sec)
	assert.True(t, ok, "b is first in line")
	assert.Len(t, l.tickets, 2)
}

func TestATurnNotUsedPassesToTheNextInLineNotToALaterArrival(t *testing.T) {
	l := newRateLine(1300*int64(time.Millisecond), 1)
	l.take("a", 0)
	_, atB, _ := l.take("b", 0)
	_, atC, _ := l.take("c", 0)
	_, atD, _ := l.take("d", 0)
	assert.Equal(t, []int64{1300e6, 2600e6, 3900e6}, []int64{atB, atC, atD}, "each waits behind those before it")

	head, ok := l.leave("b") // b's pod is alive: its turn goes unused
	assert.True(t, ok)
	assert.Equal(t, "c", head, "c is first in line now")
	assert.Equal(t, 1300*int64(time.Millisecond), l.turnAt(0, 1000e6), "the turn b left is c's")

	ok, _, _ = l.take("d", 1500e6)
	assert.False(t, ok, "d, triggered with a turn at hand, does not take c's")
	ok, _, _ = l.take("c", 1500e6)
	assert.True(t, ok)
	ok, at, _ := l.take("d", 1500e6)
	assert.False(t, ok, "one turn per 1.3s")
	assert.Equal(t, 2800*int64(time.Millisecond), at)
}

func TestAPUKeepsItsTicketThroughATrigger(t *testing.T) {
	l := newRateLine(sec, 1)
	l.take("a", 0)
	l.take("b", 0)
	l.take("c", 0)
	for range 3 { // triggers of c: each asks again, none moves it
		ok, at, _ := l.take("c", sec/2)
		assert.False(t, ok)
		assert.Equal(t, 2*sec, at, "c keeps its place behind b")
	}
}

func TestTheRateLineLetsABurstThroughAtOnce(t *testing.T) {
	l := newRateLine(sec, 3)
	for _, p := range []string{"a", "b", "c"} {
		ok, _, _ := l.take(p, 0)
		assert.True(t, ok, "%s is within the burst", p)
	}
	ok, at, _ := l.take("d", 0)
	assert.False(t, ok)
	assert.Equal(t, sec, at)
}

func TestTheRateLineHoldsTheRatesBound(t *testing.T) {
	// Turns asked for every 10ms by 50 PUs in turn, for 20s: at most rate*w + burst in any window w.
	l := newRateLine(sec/4, 2)
	var starts []int64
	for now := int64(0); now < 20*sec; now += sec / 100 {
		for p := range 50 {
			if ok, _, _ := l.take(string(rune('A'+p)), now); ok {
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
		ok, _, _ := l.take("a", 0)
		assert.True(t, ok)
	}
	assert.Empty(t, l.tickets, "no PU holds a ticket")
}

func TestABurstOfMoreThanAYearOfTurnsDoesNotOverflow(t *testing.T) {
	l := newRateLine(sec, math.MaxInt)
	ok, _, _ := l.take("a", 0)
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
	_, at, _ := l.take("e", 0)
	assert.Equal(t, 3*sec, at, "b and d are ahead of e, c no longer")
	_, at, _ = l.take("d", 0)
	assert.Equal(t, 2*sec, at, "b is ahead of d")
}

func TestTheRateLineCountsThePUsAheadExactly(t *testing.T) {
	// Against a plain count, through joins, leaves, turns taken and given back, and the line's compaction.
	l := newRateLine(sec, 2)
	var order []string // those in line, in arrival order
	arrived, n := map[string]int{}, 0
	type taken struct {
		puid string
		seq  uint64
	}
	var back []taken // turns taken, to give back
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
				order, arrived[p], n = append(order, p), n, n+1
			}
			if want := slicesIndex(order, p); in && want >= 2 {
				assert.Equal(t, want, l.ahead(l.tickets[p]), "ahead of %s at step %d", p, i)
			}
			if ok, _, seq := l.take(p, now); ok {
				order = slicesDelete(order, p)
				if i%11 == 0 {
					back = append(back, taken{p, seq})
				}
			}
		}
		if i%13 == 0 { // given back: each at its place, among those who arrived before and after it
			for _, b := range back {
				l.giveBack(b.puid, b.seq, true)
				at := len(order)
				for j, q := range order {
					if arrived[q] > arrived[b.puid] {
						at = j
						break
					}
				}
				order = append(order[:at], append([]string{b.puid}, order[at:]...)...)
			}
			back = back[:0]
			assert.Equal(t, order, lineOrder(&l), "the line at step %d", i)
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

// A turn taken and not used (DestroyPU not called) goes back with the PU to its place: ahead of those behind it, as
// its ticket was, however far the line has moved since.
func TestATurnGivenBackPutsThePUBackAtItsPlace(t *testing.T) {
	l := newRateLine(sec, 1)
	l.take("a", 0)
	_, atX, _ := l.take("x", 0)
	_, atB, _ := l.take("b", 0)
	ok, _, seqX := l.take("x", atX)
	assert.True(t, ok, "x takes its turn")

	l.giveBack("x", seqX, true)
	assert.Equal(t, []string{"x", "b"}, lineOrder(&l), "x is ahead of b again")
	_, atB2, _ := l.take("b", atX)
	assert.Equal(t, atB, atB2, "b's turn is where it was")
	ok, _, _ = l.take("x", atX)
	assert.True(t, ok, "x has its turn again: the turn went back")

	// The line emptied and refilled since: x goes first, ahead of every ticket given after its own.
	l = newRateLine(sec, 1)
	_, _, seqX = l.take("x", 0)
	l.take("c", 0)
	l.leave("c")
	l.take("d", 0)
	l.take("e", 0)
	l.giveBack("x", seqX, true)
	assert.Equal(t, []string{"x", "d", "e"}, lineOrder(&l), "x is at the head")
	assert.Equal(t, 3, len(l.tickets))
	ok, _, _ = l.take("x", 0)
	assert.True(t, ok, "its turn given back is at hand")

	// Its entry compacted away with the line emptied: it goes before the first ticket given since.
	l = newRateLine(sec, 1)
	_, _, seqX = l.take("x", 0)
	l.front() // the line, empty, gives back its entries
	for _, p := range []string{"g", "h", "i", "j"} {
		l.take(p, 0)
	}
	l.giveBack("x", seqX, true)
	assert.Equal(t, []string{"x", "g", "h", "i", "j"}, lineOrder(&l), "x is at the head")
	l.leave("h")
	for i, p := range []string{"g", "i", "j"} {
		_, at, _ := l.take(p, 0)
		assert.Equal(t, int64(i+1)*sec, at, "%s waits behind x and those before it", p)
	}

	// Given back without a place (the PU waits for a retry): the turn only.
	l = newRateLine(sec, 1)
	_, _, seqX = l.take("x", 0)
	l.take("f", 0)
	l.giveBack("x", seqX, false)
	assert.Equal(t, []string{"f"}, lineOrder(&l))
	ok, _, _ = l.take("f", 0)
	assert.True(t, ok, "the turn x gave back is f's")
}

// lineOrder returns the PUIDs holding tickets, in line order.
func lineOrder(l *rateLine) []string {
	var out []string
	l.skipStale()
	for _, e := range l.queue[l.head:] {
		if l.holds(e) {
			out = append(out, e.puid)
		}
	}
	return out
}
