package faults_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Options.ConfDir and Options.HostLocalDataDir: "a path that is there and no directory is invalid". A loop of links
// is there, names no directory, and every read of it fails: New refuses it, as ConfDir or HostLocalDataDir.
func TestNewRefusesAConfDirOrDataDirThatIsALoopOfLinks(t *testing.T) {
	e := newEnv(t)
	loop := filepath.Join(e.root, "loop1")
	if err := os.Symlink(filepath.Join(e.root, "loop2"), loop); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loop, filepath.Join(e.root, "loop2")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(loop); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("setup: stat of the loop: %v", err)
	}
	_, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: loop, HostLocalDataDir: e.data})
	if !errors.Is(err, cni.ErrInvalidOptions) {
		t.Errorf("New with ConfDir a loop of links = %v, want ErrInvalidOptions", err)
	}
	_, err = cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: loop})
	if !errors.Is(err, cni.ErrInvalidOptions) {
		t.Errorf("New with HostLocalDataDir a loop of links = %v, want ErrInvalidOptions", err)
	}
}
