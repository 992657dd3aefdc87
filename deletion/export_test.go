package deletion

// DryRunMemory is the one white-box hook of FuzzPromises
// (promises_model_test.go): how many PUIDs the engine remembers besides its
// records (those a dry run dropped while a list is to come, those a list
// under way must not bring back, and those whose removal the Observer is
// being told). Adapt it here when these internals move.
func DryRunMemory(c *Engine) int {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	return len(c.q.unlisted.cur) + len(c.q.unlisted.old) + len(c.q.list.gone) + len(c.q.list.removing)
}

// MinDryRunMemory is how many dropped PUs a dry run may remember however
// few it tracks (unlistedMemory).
const MinDryRunMemory = minUnlistedMemory
