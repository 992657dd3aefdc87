// Command ratios reads `go test -bench` output and prints, for every
// benchmark of the engine (a name with an /engine element), the median of
// each metric beside the median of its baseline (the same name cut at
// /engine, with /seed in its place) and how many times better the engine is.
// Benchmarks without a baseline (neither /engine nor /seed) are listed alone.
//
// Usage: go run ./hack/bench/ratios bench.txt
package main
