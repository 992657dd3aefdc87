package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReferencesAreUpToDate: docs/operating/values/<program>.md is what its
// chart's values.yaml says now; a value added, changed or documented anew
// without `make values-doc` fails here.
func TestReferencesAreUpToDate(t *testing.T) {
	require.NoError(t, run("../..", true))
}

// TestAStaleOrMissingReferenceFails: the check names the file and the
// command that rewrites it.
func TestAStaleOrMissingReferenceFails(t *testing.T) {
	root := chart(t, "# The image.\nimage: app\n# How many.\nreplicas: 2\n")
	err := run(root, true)
	require.Error(t, err, "no reference written yet")
	assert.Contains(t, err.Error(), "make values-doc")
	require.NoError(t, run(root, false))
	require.NoError(t, run(root, true))
	doc, err := os.ReadFile(filepath.Join(root, outDir, "prog.md"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), "| `replicas` | `2` | How many. |")

	require.NoError(t, os.WriteFile(filepath.Join(root, "examples/prog/chart/values.yaml"), []byte("# The image.\nimage: app\n# How many.\nreplicas: 3\n"), 0o644))
	assert.ErrorContains(t, run(root, true), "prog.md", "a changed default makes the reference stale")
}

// TestAnUndocumentedValueIsRefused: a value without a comment of its own or
// of its group is an error that names it; a group's comment documents its
// values.
func TestAnUndocumentedValueIsRefused(t *testing.T) {
	root := chart(t, "# The image.\nimage:\n  repository: app\n  tag: v1\nresources:\n  limits:\n    memory: 1Gi\n")
	err := run(root, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resources.limits.memory")
	assert.NotContains(t, err.Error(), "image.tag", "documented by its group")
}

// chart makes a repository root holding one chart, examples/prog/chart,
// with values.
func chart(t *testing.T, values string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "examples/prog/chart")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(values), 0o644))
	return root
}
