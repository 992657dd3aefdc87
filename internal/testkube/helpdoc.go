package testkube

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// helpFlag is a flag line of Go's flag.PrintDefaults: "  -name type".
var helpFlag = regexp.MustCompile(`^  -([a-z0-9-]+)`)

// helpDefault is the default PrintDefaults prints after a flag's usage.
var helpDefault = regexp.MustCompile(`\(default "?(.*?)"?\)$`)

// docFlag is a flag a doc comment names, with the value it gives.
var docFlag = regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)(?:=([^\]\s]+))?`)

// HelpDefaults reads the output of a program's -h (flag.PrintDefaults):
// each flag's default as printed, "" for a flag that prints none.
func HelpDefaults(help string) map[string]string {
	flags := map[string]string{}
	var name string
	for _, line := range strings.Split(help, "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			name = m[1]
			flags[name] = ""
			continue
		}
		if m := helpDefault.FindStringSubmatch(strings.TrimSpace(line)); m != nil && name != "" {
			flags[name] = m[1]
		}
	}
	return flags
}

// CheckDocSaysWhatHelpSays holds the doc comment of a program (its doc.go,
// at docPath) to the -h output help: every flag of help but the --zap-*
// log flags is named in it; every flag it names is one of help's; and
// every value its synopsis (the indented lines of the comment) gives a
// flag that has a default is that default.
func CheckDocSaysWhatHelpSays(t *testing.T, docPath, help string) {
	t.Helper()
	src, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	flags := HelpDefaults(help)
	if len(flags) == 0 {
		t.Fatalf("no flag in the help output:\n%s", help)
	}
	named := map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "//") {
			continue
		}
		synopsis := strings.HasPrefix(line, "//\t")
		if i := strings.Index(line, "kubectl "); i >= 0 {
			line = line[:i] // kubectl's flags are kubectl's
		}
		for _, m := range docFlag.FindAllStringSubmatch(line, -1) {
			name, value := m[1], m[2]
			def, ok := flags[name]
			switch {
			case !ok:
				t.Errorf("%s names --%s, which -h does not list", docPath, name)
			case synopsis && value != "" && def != "" && !strings.HasPrefix(def, "$") && !sameValue(value, def):
				t.Errorf("%s gives --%s=%s, but its default is %s", docPath, name, value, def)
			}
			named[name] = true
		}
	}
	for name := range flags {
		if !named[name] && !strings.HasPrefix(name, "zap-") {
			t.Errorf("%s does not name --%s, which -h lists", docPath, name)
		}
	}
}

// sameValue reports whether a and b are the same flag value: the same
// text, or the same duration (1m and 1m0s).
func sameValue(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return a == b || errA == nil && errB == nil && da == db
}
