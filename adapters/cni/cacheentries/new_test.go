package cacheentries_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// cni.New: "It fails with ErrInvalidOptions ... when ConfDir or HostLocalDataDir is there and is not a
// directory (a file, a loop of links, a link to nothing)".
func TestHoldsNewRefusesOddDirs(t *testing.T) {
	e := newEnv(t)
	dangling := filepath.Join(e.root, "dangling")
	_ = os.Symlink(filepath.Join(e.root, "nothing"), dangling)
	loop := filepath.Join(e.root, "loop")
	_ = os.Symlink(loop, loop)
	file := filepath.Join(e.root, "afile")
	e.write(file, "x")
	for _, p := range []string{dangling, loop, file} {
		o := e.opts(nil)
		o.HostLocalDataDir = p
		if _, err := cni.New(o); !errors.Is(err, cni.ErrInvalidOptions) {
			t.Errorf("HostLocalDataDir %s: %v", p, err)
		}
		o = e.opts(nil)
		o.ConfDir = p
		if _, err := cni.New(o); !errors.Is(err, cni.ErrInvalidOptions) {
			t.Errorf("ConfDir %s: %v", p, err)
		}
	}
}
