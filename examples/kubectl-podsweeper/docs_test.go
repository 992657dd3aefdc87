package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenBlock is a block of a doc that shows a golden output: its marker
// names the file, the fenced block after it is the file's content.
var goldenBlock = regexp.MustCompile("(?s)<!-- golden: (\\S+) -->\n```text\n(.*?)```\n")

// TestDocsShowTheGoldenOutputs: docs/operating/explain.md shows, for each
// case, what the plugin prints for its answers (testdata/*.txt, checked by
// TestRenderGolden), word for word, and every case: its examples cannot go
// stale.
func TestDocsShowTheGoldenOutputs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating", "explain.md"))
	require.NoError(t, err)
	shown := map[string]bool{}
	for _, m := range goldenBlock.FindAllStringSubmatch(string(doc), -1) {
		want, err := os.ReadFile(filepath.Join("..", "..", m[1]))
		require.NoError(t, err, "the doc shows %s", m[1])
		assert.Equal(t, string(want), m[2], "docs/operating/explain.md shows %s as it is (go test -update writes the golden file; copy it)", m[1])
		shown[filepath.Base(m[1])] = true
	}
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	require.NoError(t, err)
	for _, g := range goldens {
		assert.True(t, shown[filepath.Base(g)], "docs/operating/explain.md shows %s", g)
	}
}
