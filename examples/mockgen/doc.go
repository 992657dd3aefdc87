// Command mockgen is a test suite, not a program: rows_test.go drives the
// deletion engine only through the gomock mocks in
// github.com/podsweeper/podsweeper/mocks (golang/mock v1.6.0), one test per
// row of the decision table, the way a node agent's own CI would test its
// use of podsweeper. It imports only podsweeper's public packages (the
// mocks, deletion, its test kit deletion/deletiontest, and ports), so it
// can be copied into an agent's repository as it is. Run it with
//
//	go test ./examples/mockgen
//
// TestTheSuitePassesOutsideTheModule (standalone_test.go) holds that
// promise: it copies the suite into a module of its own, outside this one,
// and runs go test there.
//
// The engine calls the mocks from its own goroutines, where gomock's default
// report of an unexpected call, t.Fatalf, must not be used: it calls
// runtime.Goexit, which ends the engine's goroutine in the middle of a check
// instead of the test. The suite gives gomock.NewController the kit's
// deletiontest.NewMockReporter(t), whose Fatalf is t.Errorf: the test is
// marked failed at once, gomock's call then panics, and the engine recovers
// the panic as it does any port's (TestAnUnexpectedCallFromAWorkerIsReported).
package main
