// Package crossings_test holds where two of the engine's mechanisms meet, as
// an independent review found them broken: the Inventory's first list and
// a check of the same PU already under way (the list's sandbox comes first);
// the first list and the failures' summaries (summed up as any port's); the
// first list's deadline and a fake Clock (LivenessCheck); and a Clock at the
// zero time (refused by New).
package crossings_test
