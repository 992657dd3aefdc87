package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTheSuitePassesOutsideTheModule: the suite is what a node agent's own
// CI would run, so it must need nothing of podsweeper but its public API.
// Its files (all but the standalone ones) are copied into a module of
// their own, outside this one, that requires podsweeper through a replace
// to this repository; go test must build and pass them there. An import of
// an internal package would not build ("use of internal package ... not
// allowed").
func TestTheSuitePassesOutsideTheModule(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("the temporary directory %s is inside the module at %s", dir, root)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), "standalone") || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		src, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), src, 0o644); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if copied == 0 {
		t.Fatal("no file of the suite to copy")
	}
	goMod := "module example.com/agent\n\ngo 1.26.0\n\n" +
		"require github.com/podsweeper/podsweeper v0.0.0\n\n" +
		"replace github.com/podsweeper/podsweeper => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	// podsweeper's go.sum holds the checksums of every module the suite
	// needs: the go command then asks no checksum database.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{"test", "-count=1"}
	if raceEnabled { // the packages are built for the race detector already: no second build of them
		args = append(args, "-race")
	}
	//lint:ignore SA1019 the go command of the toolchain that runs this test, as the go command's own tests find it
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goCmd, append(args, "./...")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in a module of its own: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s in %s:\n%s", strings.Join(args, " "), dir, out)
}
