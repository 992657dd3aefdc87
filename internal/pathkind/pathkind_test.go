package pathkind_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/podsweeper/podsweeper/internal/pathkind"
)

func TestOfTellsWhatAPathNames(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"loop1": "loop2", "loop2": "loop1", "dangling": "nothing", "todir": ".", "tofile": "file"}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]pathkind.Kind{
		dir: pathkind.Dir, file: pathkind.File, filepath.Join(dir, "fifo"): pathkind.Other,
		filepath.Join(dir, "missing"): pathkind.Missing, filepath.Join(dir, "dangling"): pathkind.Dangling, filepath.Join(dir, "dangling", "below"): pathkind.Dangling,
		filepath.Join(dir, "todir"): pathkind.Dir, filepath.Join(dir, "tofile"): pathkind.File,
		filepath.Join(dir, "loop1"): pathkind.Loop, filepath.Join(file, "below"): pathkind.Unreadable,
	} {
		got, info, err := pathkind.Of(path)
		if got != want {
			t.Errorf("Of(%s) = %v (%v), want %v", path, got, err, want)
		}
		if (info != nil) != (want == pathkind.Dir || want == pathkind.File || want == pathkind.Other) || (err == nil) != (info != nil) {
			t.Errorf("Of(%s): info %v, err %v", path, info, err)
		}
	}
}
