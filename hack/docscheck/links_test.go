package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
)

// link is a Markdown link's target.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestEveryRelativeLinkOfTheDocsResolves: a Markdown file's link to a file
// or directory of the repository names one that is there, so that a page
// moved or renamed leaves no dead link behind. Links to the web are not
// followed; TestEveryAnchorOfTheDocsResolves checks the anchors.
func TestEveryRelativeLinkOfTheDocsResolves(t *testing.T) {
	for _, f := range markdown(t, root) {
		if strings.HasPrefix(f.file, "api/") || f.file == "CHANGELOG.md" {
			continue // history: the API and the changes of a release, as they were
		}
		for _, m := range link.FindAllStringSubmatch(f.text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Join(root, filepath.Dir(f.file), target)
			_, err := os.Stat(path)
			assert.NoError(t, err, "%s links %s", f.file, m[1])
		}
	}
}

// heading is a Markdown heading line, outside code blocks.
var heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)

// anchors returns the anchors GitHub gives the headings of a Markdown
// text: lower case, every character but letters, digits, spaces, hyphens
// and underscores dropped, spaces made hyphens, and "-1", "-2" after a
// repeated one.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inCode || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		for i := 1; out[a]; i++ {
			a = fmt.Sprintf("%s-%d", b.String(), i)
		}
		out[a] = true
	}
	return out
}

func TestAnchors(t *testing.T) {
	got := anchors("# How the SDK is tested\n## `make test` on a fresh machine\n```sh\n# not a heading\n```\n" +
		"## A thousand nodes on a real API server (`make bench-scale`)\n## Run them\n## Run them\n")
	assert.Equal(t, map[string]bool{"how-the-sdk-is-tested": true, "make-test-on-a-fresh-machine": true,
		"a-thousand-nodes-on-a-real-api-server-make-bench-scale": true, "run-them": true, "run-them-1": true}, got)
}

// TestEveryAnchorOfTheDocsResolves: a link to a heading of a Markdown file
// of the repository (its own, "#x", or another's, "file.md#x") names a
// heading that is there, so that a heading renamed leaves no dead link.
func TestEveryAnchorOfTheDocsResolves(t *testing.T) {
	files := markdown(t, root)
	byPath := map[string]map[string]bool{}
	for _, f := range files {
		byPath[filepath.Clean(f.file)] = anchors(f.text)
	}
	for _, f := range files {
		if strings.HasPrefix(f.file, "api/") || f.file == "CHANGELOG.md" {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(f.text, -1) {
			target, anchor, ok := strings.Cut(m[1], "#")
			if !ok || strings.Contains(target, "://") || anchor == "" {
				continue
			}
			page := filepath.Clean(f.file)
			if target != "" {
				page = filepath.Clean(filepath.Join(filepath.Dir(f.file), target))
			}
			heads, md := byPath[page]
			if !md {
				continue // not a Markdown file of the repository: a line of code, say
			}
			assert.True(t, heads[anchor], "%s links %s: %s has no heading for #%s", f.file, m[1], page, anchor)
		}
	}
}
