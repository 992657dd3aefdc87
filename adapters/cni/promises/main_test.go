package promises_test

import (
	"os"
	"testing"

	"github.com/podsweeper/podsweeper/internal/privatens"
)

// insideEnv is set in the child that runs the tests in private network and
// mount namespaces (internal/privatens), where the real plugins may run.
const insideEnv = "PODSWEEPER_CNI_PROMISES_IN_NETNS"

// noNetNS says why the tests run outside the private namespaces ("" inside).
var noNetNS string

func TestMain(m *testing.M) {
	os.Exit(privatens.Run(insideEnv, m.Run, func(reason string) int {
		noNetNS = reason
		return m.Run()
	}))
}

// needPrivateNS skips t outside the private namespaces, and fails it there
// under CI=true: a test of the real plugins must run in CI.
func needPrivateNS(t *testing.T) {
	t.Helper()
	if privatens.Inside(insideEnv) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(noNetNS)
	}
	t.Skip(noNetNS)
}
