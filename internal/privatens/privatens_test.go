package privatens_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/internal/privatens"
)

const (
	insideEnv = "PODSWEEPER_PRIVATENS_TEST_INSIDE"
	markEnv   = "PODSWEEPER_PRIVATENS_TEST_MARK"
)

// Run's child is its PID namespace's init: a process a test started and left (a kube-apiserver, an etcd, a plugin)
// ends with the child, however the child ends, and never outlives the run. The child here starts a sleep and exits
// at once; once Run returns, no process of the host runs that sleep.
func TestAProcessATestLeftEndsWithTheRun(t *testing.T) {
	if privatens.Inside(insideEnv) { // the child: leave a process behind, and end
		os.Exit(privatens.Run(insideEnv, func() int {
			if err := exec.Command("sleep", os.Getenv(markEnv)).Start(); err != nil {
				return 1
			}
			return 3
		}, func(string) int { return 1 }))
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("not root: private namespaces cannot be made")
		}
		t.Skip("not root: private namespaces cannot be made")
	}
	mark := "3000." + strconv.FormatInt(time.Now().UnixNano()%1e9, 10) // seconds: a sleep no one else runs
	t.Setenv(markEnv, mark)
	var outside string
	code := privatens.Run(insideEnv, func() int { return 1 }, func(reason string) int { outside = reason; return 0 })
	if outside != "" {
		t.Fatalf("private namespaces cannot be made: %s", outside)
	}
	if code != 3 {
		t.Fatalf("Run returned %d, want the child's 3", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := sleeping(t, mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("the child's sleep %s outlived it: pids %v", mark, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sleeping returns the pids of the host's processes that run "sleep mark".
func sleeping(t *testing.T, mark string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("sleep\x00" + mark + "\x00")
	var pids []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.HasSuffix(b, want) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
