// Package apidiff holds the test that shows the API gate, make verify-apidiff
// (hack/apidiff.sh), can fail: on a copy of the repository, an exported name
// removed fails the gate until CHANGELOG.md's Unreleased section names it
// under "### Breaking", and an entry naming something else does not let it
// pass. It has no code of its own; go test ./... (make test) runs the test.
package apidiff
