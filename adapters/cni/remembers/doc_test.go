// Package remembers_test holds what the Collector remembers across its
// reads and rounds, as an independent review found it broken: a sandbox
// whose cache entry is cut short for a read keeps its refusals, its give-up
// and its address page's decision; a reservation released before a round's
// DEL of its sibling is told released by its runtime, not freed by that DEL;
// and a dry run's round waits for the rate's turns and asks the runtime
// again as a real round does.
package remembers_test
