package deletiontest

import "testing"

// MockReporter is the gomock.TestReporter to give gomock.NewController (of
// github.com/golang/mock or go.uber.org/mock) for mocks of ports that the
// engine calls from its own goroutines: Start's workers, and a Sweep's.
//
// gomock reports an unexpected call with Fatalf. testing's Fatalf calls
// runtime.Goexit, which may end only the test's own goroutine: from one of
// the engine's, it ends that goroutine in the middle of a check, whose slot
// then stays taken as a check stuck in a port does, and Sweep, or Start's
// stop, waits CheckTimeout and a second (31 s by default; fake time in a
// testing/synctest bubble, but a stall of the test's real time too without
// one) before the test fails with a message far from its cause.
// MockReporter's Fatalf is t.Errorf: the test is marked failed at once and
// the call returns; gomock then panics on the missing expectation, and the
// engine recovers that panic as it does any port's (deletion.ErrPortPanicked)
// and goes on.
//
// It has t's Cleanup, through which gomock.NewController checks, when the
// test ends, the calls the test expected and never got; and t's Helper.
type MockReporter struct {
	t testing.TB
}

// NewMockReporter returns the MockReporter of t.
func NewMockReporter(t testing.TB) MockReporter { return MockReporter{t: t} }

// Errorf is t.Errorf.
func (r MockReporter) Errorf(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf(format, args...)
}

// Fatalf is t.Errorf, not t.Fatalf: it returns, from whichever goroutine
// calls it.
func (r MockReporter) Fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf(format, args...)
}

// Helper is t.Helper.
func (r MockReporter) Helper() { r.t.Helper() }

// Cleanup is t.Cleanup.
func (r MockReporter) Cleanup(f func()) { r.t.Cleanup(f) }
