package cni

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Only a bind-mounted nsfs outside /proc is passed to a DEL; only a path
// that is gone, or no longer a namespace outside /proc, says the
// namespace is gone. (The bind-mounted case runs on the real plugins, in
// node_test.go's namespaces.)
func TestWhichCachedNetNSIsTrusted(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "cni-unmounted")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		gone bool
	}{
		{path: ""},
		{path: "relative/netns"},
		{path: "/proc/self/ns/net"},               // live, but of whatever process has the PID
		{path: "/proc/1/ns/net"},                  // the same
		{path: "/proc/../proc/self/ns/net"},       // cleaned first
		{path: "/run/netns/cni-gone", gone: true}, // removed with its sandbox
		{path: plain, gone: true},                 // unmounted, not removed
		{path: filepath.Join(t.TempDir(), "no", "such", "dir", "x"), gone: true},
	} {
		assert.Empty(t, liveNetNS(tc.path), tc.path)
		assert.Equal(t, tc.gone, netnsGone(tc.path), "gone: %s", tc.path)
	}
}
