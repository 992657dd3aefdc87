// Package evidence_test holds what the collector takes for evidence, as an
// independent review found it broken: the files of a reservation's DEL read
// again right before it, its own among them and in every data directory of
// its network (row 17); a runtime's answer that lists one sandbox twice; a
// cache entry not used, whose network namespace tells all the same (row
// 4); the lists a dry run tracks its PUs by; and the order WouldFree tells.
package evidence_test
