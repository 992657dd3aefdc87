package docscheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// marker names the compiled region a Go block shows.
var marker = regexp.MustCompile(`^<!-- compiled: ([^#\s]+)#(\S+) -->$`)

// block is a ```go block of a Markdown file.
type block struct {
	file   string
	line   int
	source string // the region it names, "path#name"; empty: none
	text   string
}

// TestEveryGoBlockOfTheDocsIsCompiled: every Go block of the Markdown files
// names a compiled region and shows it as it is.
func TestEveryGoBlockOfTheDocsIsCompiled(t *testing.T) {
	blocks := goBlocks(t, root)
	require.NotEmpty(t, blocks, "README.md has Go blocks")
	for _, b := range blocks {
		if !assert.NotEmpty(t, b.source, "%s:%d: a Go block with no <!-- compiled: file#region --> line above it", b.file, b.line) {
			continue
		}
		region, err := regionOf(root, b.source)
		if assert.NoError(t, err, "%s:%d", b.file, b.line) {
			assert.Equal(t, trimBlank(region), trimBlank(b.text), "%s:%d: the block differs from %s", b.file, b.line, b.source)
		}
	}
}

// TestADriftedBlockIsCaught: a block that no longer matches its region,
// or names none, fails (the check above cannot pass vacuously).
func TestADriftedBlockIsCaught(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
	write("x/a_test.go", "package x\n\nfunc f() {\n\t// docs:begin hello\n\tprintln(\"hello\")\n\t// docs:end hello\n}\n")
	write("README.md", "<!-- compiled: x/a_test.go#hello -->\n```go\nprintln(\"hello\")\n```\n\n```go\nloose()\n```\n")
	blocks := goBlocks(t, dir)
	require.Len(t, blocks, 2)
	region, err := regionOf(dir, blocks[0].source)
	require.NoError(t, err)
	assert.Equal(t, blocks[0].text, region)
	assert.Empty(t, blocks[1].source, "a block without a marker names no region")
	write("x/a_test.go", "package x\n\nfunc f() {\n\t// docs:begin hello\n\tprintln(\"bye\")\n\t// docs:end hello\n}\n")
	region, err = regionOf(dir, blocks[0].source)
	require.NoError(t, err)
	assert.NotEqual(t, blocks[0].text, region, "a changed region no longer matches")
	_, err = regionOf(dir, "x/a_test.go#gone")
	assert.Error(t, err, "a region that is not there")
}

// trimBlank drops the blank lines at the ends of s: a region may end before
// the blank line that follows its function, and one of a whole file begins
// with the blank line after its marker.
func trimBlank(s string) string {
	return strings.TrimLeft(strings.TrimRight(s, " \t\n"), "\n") + "\n"
}

// goBlocks returns the ```go blocks of the Markdown files under dir, but
// those of bin/, testdata/ and hidden directories.
func goBlocks(t *testing.T, dir string) []block {
	t.Helper()
	var blocks []block
	for _, f := range markdown(t, dir) {
		blocks = append(blocks, parse(f.file, []byte(f.text))...)
	}
	return blocks
}

// markdown returns every Markdown file under dir (but bin/, testdata/ and
// hidden directories) whole, as one block each.
func markdown(t *testing.T, dir string) []block {
	t.Helper()
	var files []block
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != dir && (name == "bin" || name == "testdata" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, block{file: rel, text: string(b)})
		return nil
	})
	require.NoError(t, err)
	return files
}

// parse returns the Go blocks of the Markdown text md of file.
func parse(file string, md []byte) []block {
	var blocks []block
	var cur *block
	prev := ""
	s := bufio.NewScanner(bytes.NewReader(md))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{file: file, line: n}
			if m := marker.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.source = m[1] + "#" + m[2]
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	return blocks
}

// regionOf returns the region "path#name" of a Go file under dir, less the
// indentation of its begin line.
func regionOf(dir, source string) (string, error) {
	path, name, _ := strings.Cut(source, "#")
	b, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		return "", err
	}
	begin, end := "// docs:begin "+name, "// docs:end "+name
	var out strings.Builder
	indent, in, found := "", false, false
	for line := range strings.Lines(string(b)) {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == begin:
			in, found = true, true
			indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		case in && trimmed == end:
			return out.String(), nil
		case in:
			out.WriteString(strings.TrimPrefix(line, indent))
		}
	}
	if found {
		return "", fmt.Errorf("%s: %q has no end", path, begin)
	}
	return "", fmt.Errorf("%s: no region %q", path, name)
}
