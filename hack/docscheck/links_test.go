package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// link is a Markdown link's target.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestEveryRelativeLinkOfTheDocsResolves: a Markdown file's link to a file
// or directory of the repository names one that is there, so that a page
// moved or renamed leaves no dead link behind. Links to the web and to
// anchors are not followed.
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
