// Command mockgen is a test suite, not a program: rows_test.go drives the
// deletion engine only through the gomock mocks in
// github.com/podsweeper/podsweeper/mocks (golang/mock v1.6.0), one test per
// row of the decision table, the way a node agent's own CI would test its
// use of podsweeper. Run it with
//
//	go test ./examples/mockgen
package main
