package deletiontest_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTheGuidesCodeIsTheKits: every Go code block of docs/sdk/testing.md
// is a part of an Example or a test of this package, line for line but for
// indentation, so that the guide shows code that compiles and passes.
func TestTheGuidesCodeIsTheKits(t *testing.T) {
	guide, err := os.ReadFile("../../docs/sdk/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	var kit []string
	for _, name := range []string{"example_test.go", "guide_test.go"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		kit = append(kit, trimLines(string(src)))
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(guide), -1)
	if len(blocks) == 0 {
		t.Fatal("the guide has no Go code block")
	}
	for _, b := range blocks {
		code := trimLines(b[1])
		found := false
		for _, src := range kit {
			found = found || strings.Contains(src, code)
		}
		if !found {
			t.Errorf("this block of the guide is in no Example or test of deletiontest:\n%s", b[1])
		}
	}
}

// trimLines returns s with every line's leading and trailing blanks cut,
// each line ended by a newline.
func trimLines(s string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		b.WriteString(strings.TrimSpace(l))
		b.WriteByte('\n')
	}
	return b.String()
}
