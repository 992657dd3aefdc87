// Package seedref is the yardstick of the SDK's benchmarks and tests: a
// faithful port of trireme-lib's DeleteController loop onto the SDK's ports.
//
// It keeps the original algorithm and its slowness on purpose: one
// goroutine owns a map of entries, fed through a 1000-slot channel; a ticker
// and an unbuffered reconcile channel each start a pass that checks every
// entry one after another; DestroyPU errors are logged nowhere and dropped;
// a sandbox change is announced with a blocking channel send; and an empty
// current sandbox destroys a PU whose recorded sandbox is known. It is
// internal and used only by tests and benchmarks; the SDK's engine is
// package deletion.
package seedref
