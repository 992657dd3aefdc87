package deletion

// The destroy rate's line (Options.DestroyRate): a PU whose check decides a destroy takes a ticket, in arrival order,
// and turns come at the rate's pace (GCRA: burst at once, then one every `every`). The PUs ahead of one are counted
// exactly, by a Fenwick tree over the line. Times are the engine's; the line holds PUIDs, not records.

// rateLine is the line of PUs waiting for a turn to destroy, under puQueue.mu. Its zero value has no limit.
type rateLine struct {
	every, tau int64 // the time between two turns (0: no limit), and (burst-1)*every
	tat        int64 // GCRA's theoretical arrival time: turns are at hand from tat-tau on

	// stuck reports whether the PU of puid is held by a check stuck in a port past its deadline: it keeps its ticket,
	// but none behind it waits for it (nil: none is). A hung port costs its own check, not every destroy.
	stuck func(puid string) bool

	seq     uint64
	tickets map[string]uint64 // each PUID in line, and its ticket
	queue   []lineEntry       // the tickets in arrival order, from head on; an entry whose PUID holds another ticket is stale
	head    int
	base    uint64  // the ticket of queue[0]: the tickets in queue are base, base+1...
	held    []int32 // a Fenwick tree over queue: how many of its entries are held (not stale)
}

type lineEntry struct {
	puid string
	seq  uint64
}

// newRateLine returns a line that gives a turn every `every` (> 0) nanoseconds, burst at once.
func newRateLine(every int64, burst int) rateLine {
	// A burst of more than a year of turns (MaxDuration) is a year of turns: (burst-1)*every would overflow.
	tau := (min(int64(burst), max(int64(MaxDuration)/every, 1)) - 1) * every
	return rateLine{every: every, tau: tau, tickets: make(map[string]uint64)}
}

// limited reports whether the line bounds destroys at all.
func (l *rateLine) limited() bool { return l.every > 0 }

// take gives puid a ticket if it has none, and reports whether its turn is at hand at now: then it takes the turn and
// leaves the line, and seq is the ticket it held, for giveBack. Otherwise it keeps its ticket, and at is about when
// its turn comes (MaxDuration at the latest).
func (l *rateLine) take(puid string, now int64) (ok bool, at int64, seq uint64) {
	if !l.limited() {
		return true, now, 0
	}
	seq, in := l.tickets[puid]
	if !in {
		l.seq++
		if seq, l.tickets[puid] = l.seq, l.seq; len(l.queue) == 0 {
			l.base = seq
		}
		l.queue = append(l.queue, lineEntry{puid, seq})
		l.grow(true)
	}
	if at = l.turnAt(l.ahead(seq), now); at > now {
		return false, at, 0
	}
	l.tat = max(l.tat, now) + l.every
	l.leave(puid)
	return true, now, seq
}

// giveBack undoes take's turn of puid, which held the ticket seq and destroyed nothing: the turn goes back to the
// line, and with queue puid takes its place in it again, ahead of every ticket given after seq. The turns taken since
// take stay where they were: a turn given back never brings more turns than take had left.
func (l *rateLine) giveBack(puid string, seq uint64, queue bool) {
	if !l.limited() || seq == 0 {
		return
	}
	l.tat -= l.every
	if _, in := l.tickets[puid]; in || !queue {
		return
	}
	l.skipStale()
	switch i := int64(seq) - int64(l.base); {
	case len(l.queue) == 0:
		l.queue, l.base = append(l.queue, lineEntry{puid, seq}), seq
		l.held = l.held[:0]
		l.grow(true)
	case i >= int64(l.head) && i < int64(len(l.queue)): // its own entry, no longer held
		l.queue[i] = lineEntry{puid, seq}
		l.add(int(i), 1)
	default: // every ticket still held came after seq: it goes first, in the entry before the head
		if l.head == 0 {
			l.queue = append([]lineEntry{{}}, l.queue...)
			l.head, l.base = 1, l.base-1
			l.regrow()
		}
		l.head--
		seq = l.base + uint64(l.head)
		l.queue[l.head] = lineEntry{puid, seq}
		l.add(l.head, 1)
	}
	l.tickets[puid] = seq
}

// leave gives back puid's ticket, if it has one: a turn it did not use goes to the next in line. It reports the PUID
// at the head of the line after, if puid had a ticket and the line holds another.
func (l *rateLine) leave(puid string) (head string, ok bool) {
	seq, in := l.tickets[puid]
	if !in {
		return "", false
	}
	delete(l.tickets, puid)
	l.add(int(seq-l.base), -1)
	return l.front()
}

// turnAt returns when the turn of one with ahead PUs ahead of it in line comes, the latest turn taken at tat: the
// first burst turns are at hand once tat-tau has passed, the others one every `every` after.
func (l *rateLine) turnAt(ahead int, now int64) int64 {
	wait := min(int64(ahead), int64(MaxDuration)/l.every) * l.every
	return max(now, max(now, l.tat)+wait-l.tau)
}

// ahead returns how many PUs in line hold a ticket before seq, but for those within the burst from the head that are
// stuck in a port (stuck).
func (l *rateLine) ahead(seq uint64) int {
	l.skipStale()
	n, limit := 0, int(l.tau/l.every)+1
	for _, e := range l.queue[l.head:] {
		switch {
		case e.seq == seq:
			return n
		case n >= limit: // far from a turn: the tickets held between, counted by the tree
			return n + l.heldBefore(int(seq-l.base)) - l.heldBefore(int(e.seq-l.base))
		case l.holds(e) && (l.stuck == nil || !l.stuck(e.puid)):
			n++
		}
	}
	return n
}

// holds reports whether e's PUID still holds its ticket.
func (l *rateLine) holds(e lineEntry) bool { return e.puid != "" && l.tickets[e.puid] == e.seq }

// grow appends the tree's node over the last entry of queue, held or not: node i covers the entries (i-lowbit(i), i].
func (l *rateLine) grow(held bool) {
	i := len(l.held) + 1
	n := l.heldBefore(i-1) - l.heldBefore(i-i&-i)
	if held {
		n++
	}
	l.held = append(l.held, int32(n))
}

// add adds d to the count of queue[i], held (1) or stale (0).
func (l *rateLine) add(i, d int) {
	for i++; i <= len(l.held); i += i & -i {
		l.held[i-1] += int32(d)
	}
}

// heldBefore returns how many of queue[:i] are held.
func (l *rateLine) heldBefore(i int) int {
	n := 0
	for ; i > 0; i -= i & -i {
		n += int(l.held[i-1])
	}
	return n
}

// skipStale moves the head past the entries no PU holds, and gives back the consumed head.
func (l *rateLine) skipStale() {
	for l.head < len(l.queue) && !l.holds(l.queue[l.head]) {
		l.queue[l.head] = lineEntry{}
		l.head++
	}
	var moved bool
	if l.queue, l.head, moved = compact(l.queue, l.head); !moved {
		return
	}
	if len(l.queue) > 0 {
		l.base = l.queue[0].seq
	}
	l.regrow()
}

// regrow builds the tree over queue anew.
func (l *rateLine) regrow() {
	if l.held = l.held[:0]; l.queue == nil {
		l.held = nil
	}
	for _, e := range l.queue {
		l.grow(l.holds(e))
	}
}

// front returns the PUID at the head of the line, if any.
func (l *rateLine) front() (string, bool) {
	l.skipStale()
	if l.head < len(l.queue) {
		return l.queue[l.head].puid, true
	}
	return "", false
}
