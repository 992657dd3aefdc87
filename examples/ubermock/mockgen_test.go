package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guide is the guide that gives users the mockgen command.
const guide = "../../docs/sdk/testing-mocks.md"

// mockgenCommand returns the one line of the guide that runs
// go.uber.org/mock's mockgen.
func mockgenCommand(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(guide)
	require.NoError(t, err)
	var found []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "go run go.uber.org/mock/mockgen@") {
			found = append(found, line)
		}
	}
	require.Len(t, found, 1, "%s gives one go.uber.org/mock mockgen command", guide)
	return found[0]
}

// TestTheGuidesMockgenCommandIsTheGenerateDirective: the command the guide
// gives is the one go generate runs here, and its mockgen is the version
// go.mod requires, the one whose gomock the generated mocks import.
func TestTheGuidesMockgenCommandIsTheGenerateDirective(t *testing.T) {
	cmd := mockgenCommand(t)

	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	assert.Contains(t, string(doc), "\n//go:generate "+cmd+"\n", "doc.go's go:generate directive is the guide's command")

	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*go\.uber\.org/mock (v\S+)`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod requires go.uber.org/mock")
	assert.True(t, strings.HasPrefix(cmd, "go run go.uber.org/mock/mockgen@"+string(m[1])+" "),
		"the command runs mockgen %s, the version go.mod requires", m[1])
}

// TestTheGuidesMockgenCommandGeneratesPortsmock runs the guide's command
// in a module of its own, as a node agent's module that requires the SDK
// and go.uber.org/mock, and checks that it writes portsmock/ports.go as
// committed: the mocks the tests here drive the engine with are the ones
// users get.
func TestTheGuidesMockgenCommandGeneratesPortsmock(t *testing.T) {
	cmd := mockgenCommand(t)
	require.NotContains(t, cmd, `"`, "the command is split on spaces")
	require.NotContains(t, cmd, `'`, "the command is split on spaces")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)

	agent := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(agent, f), b, 0o600))
	}
	run(t, agent, "go", "mod", "edit", "-module=example.com/agent", "-replace=github.com/podsweeper/podsweeper="+root)
	args := strings.Fields(cmd)
	run(t, agent, args[0], args[1:]...)

	want, err := os.ReadFile(filepath.Join("portsmock", "ports.go"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(agent, "portsmock", "ports.go"))
	require.NoError(t, err)
	if !bytes.Equal(got, want) {
		t.Errorf("the guide's command writes a portsmock/ports.go other than the committed one: run `go generate -C examples/ubermock ./...` and commit the result\n%s", got)
	}
}

// run runs name with args in dir, outside any workspace, and fails the
// test with its output if it fails.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	c := exec.CommandContext(t.Context(), name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := c.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
}
