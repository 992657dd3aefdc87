package deletion

// DryRunMemory is the one white-box hook of FuzzPromises
// (promises_model_test.go): how many PUIDs the engine remembers besides its
// records (those a dry run dropped while a list is to come, those a list
// under way must not bring back, and those whose removal the Observer is
// being told). Adapt it here when these internals move.
func DryRunMemory(c *Engine) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.unlisted.cur) + len(c.unlisted.old) + len(c.list.gone) + len(c.list.removing)
}

// MinDryRunMemory is how many dropped PUs a dry run may remember however
// few it tracks (unlistedMemory).
const MinDryRunMemory = minUnlistedMemory
