package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThePortsTheDocsNameAreThePorts: docs/sdk/ports.md lists every
// interface of the ports package, and no other; and wherever the docs count
// the ports ("the six ports"), the count is theirs. The CHANGELOG, a
// history, is not read.
func TestThePortsTheDocsNameAreThePorts(t *testing.T) {
	ports := interfaces(t, filepath.Join(root, "ports"))
	require.NotEmpty(t, ports)
	doc, err := os.ReadFile(filepath.Join(root, "docs/sdk/ports.md"))
	require.NoError(t, err)
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Za-z]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	assert.Equal(t, ports, listed, "the ports docs/sdk/ports.md lists")

	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	want := words[len(ports)]
	count := regexp.MustCompile(`(?i)\b(one|two|three|four|five|six|seven|eight|nine|ten|[0-9]+) ports\b`)
	for _, b := range markdown(t, root) {
		if filepath.Base(b.file) == "CHANGELOG.md" {
			continue
		}
		for _, m := range count.FindAllStringSubmatch(b.text, -1) {
			assert.Equal(t, want, strings.ToLower(m[1]), "%s counts the ports as %q", b.file, m[0])
		}
	}
}

// interfaces returns the exported interface types declared in the package
// in dir, sorted.
func interfaces(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, isIface := ts.Type.(*ast.InterfaceType); isIface && ts.Name.IsExported() {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
