package deletion_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheEngineLockIsTakenInQueueGoAlone: a PU's life changes state in one
// file, under one lock (queue.go): no other file of the engine takes it,
// so that no mechanism can change a record behind the queue's back.
func TestTheEngineLockIsTakenInQueueGoAlone(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "queue.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "q.mu.Lock()") || strings.Contains(line, "q.mu.RLock()") {
				t.Errorf("%s:%d takes the queue's lock: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
