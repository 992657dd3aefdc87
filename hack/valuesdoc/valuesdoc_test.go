package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
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

// TestEverySchemaCoversItsChartsValues: each chart's values.schema.json,
// which helm checks the values against at every render, names every value
// of its values.yaml with a type, and no value values.yaml does not have:
// a value added to one and not to the other fails here, but for one whose
// schema's description starts with "Optional" (the chart takes it, and
// values.yaml leaves it unset). Free-form objects (affinity, labels) are
// covered as a whole.
func TestEverySchemaCoversItsChartsValues(t *testing.T) {
	charts, err := filepath.Glob("../../examples/*/chart")
	require.NoError(t, err)
	require.NotEmpty(t, charts)
	for _, dir := range charts {
		var values map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(b, &values))
		var schema map[string]any
		b, err = os.ReadFile(filepath.Join(dir, "values.schema.json"))
		require.NoError(t, err, "%s has a values.schema.json", dir)
		require.NoError(t, json.Unmarshal(b, &schema))
		covers(t, dir, "", values, schema)
	}
}

// covers checks that schema, the schema of the object at path, names each
// of its values with a type, and no other but a parent chart's global.
func covers(t *testing.T, chart, path string, values map[string]any, schema map[string]any) {
	t.Helper()
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		assert.Equal(t, "object", schema["type"], "%s: %s is an object", chart, path)
		return // free-form
	}
	for key, v := range values {
		sub, ok := props[key].(map[string]any)
		if !assert.True(t, ok, "%s: the schema has no %s%s", chart, path, key) {
			continue
		}
		assert.True(t, sub["type"] != nil || sub["oneOf"] != nil, "%s: %s%s has a type", chart, path, key)
		if m, ok := v.(map[string]any); ok {
			covers(t, chart, path+key+".", m, sub)
		}
	}
	for key, s := range props {
		_, ok := values[key]
		desc, _ := s.(map[string]any)["description"].(string)
		optional := strings.HasPrefix(desc, "Optional") // a value the chart takes, left unset by values.yaml
		assert.True(t, ok || optional || (path == "" && key == "global"), "%s: the schema's %s%s is no value of values.yaml", chart, path, key)
	}
}

// TestEveryChartHoldsTheSharedHelpers: each chart's templates/_helpers.tpl
// is examples/chart/_helpers.tpl, as `make generate` copies it: a change of
// the shared helpers without the copy fails here.
func TestEveryChartHoldsTheSharedHelpers(t *testing.T) {
	want, err := os.ReadFile("../../examples/chart/_helpers.tpl")
	require.NoError(t, err)
	for _, c := range []string{"node-agent", "cluster-controller", "cni-gc"} {
		path := filepath.Join("../../examples", c, "chart", "templates", "_helpers.tpl")
		info, err := os.Lstat(path)
		require.NoError(t, err)
		assert.True(t, info.Mode().IsRegular(), "%s is a file, not a link: a chart copied elsewhere must be whole", path)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s differs from examples/chart/_helpers.tpl: run `make generate`", path)
	}
}
