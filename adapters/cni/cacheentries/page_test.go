package cacheentries_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// Hold: a network's directory that is a link to nothing is named in unread.
func TestHoldsPageTellsNetworkDirLinkToNothing(t *testing.T) {
	e := newEnv(t)
	e.write(e.conf+"/10-podnet.conflist", hostLocalConf("podnet", e.data, ""))
	if err := os.Symlink(filepath.Join(e.root, "not-mounted"), filepath.Join(e.data, "podnet")); err != nil {
		t.Fatal(err)
	}
	c, err := cni.New(e.opts(&fakeRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	st := oneRound(t, c, "10.88.0.4")
	if !strings.Contains(strings.Join(st.Unread, "\n"), "podnet") {
		t.Errorf("unread: %q", st.Unread)
	}
}
