package deletion

// DryRunMemory is the white-box hook of FuzzPromises
// (promises_model_test.go): how many PUIDs the engine remembers besides its
// records (those a dry run dropped while a list is to come, those a list
// under way must not bring back, and those whose removal the Observer is
// being told). Adapt it here when these internals move.
func DryRunMemory(c *Engine) int {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	m := &c.q.unlisted
	return len(m.gone) + len(m.untracked) + len(c.q.list.gone) + len(c.q.list.removing)
}

// MinDryRunMemory is how many dropped PUs a dry run may remember however
// few it tracks (unlistedMemory).
const MinDryRunMemory = minUnlistedMemory

// RateLine is the one white-box hook of FuzzModel (model_test.go): the PUIDs
// in the destroy rate's line, in its order, which the model checks and then
// follows where the rate lets the engine choose (the order of the PUs that
// join the line at one instant).
func RateLine(c *Engine) []string {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	l := &c.q.rate
	var out []string
	for _, e := range l.queue[l.head:] {
		if seq, ok := l.tickets[e.puid]; ok && seq == e.seq {
			out = append(out, e.puid)
		}
	}
	return out
}

// ReadyEntries is the white-box hook of TestAHealthCheckDropsTheStaleChecksOfADrain (health_test.go): the entries of
// the ready queue past its head, live or stale, which a health check must not walk again and again.
func ReadyEntries(c *Engine) int {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	return len(c.q.ready.items) - c.q.ready.head
}
