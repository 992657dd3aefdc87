package cni

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Only a bind-mounted nsfs outside /proc, not a link, is passed to a DEL;
// only a path that is gone from a directory that is there, or a process
// that is gone, says the namespace is gone; a path that is there, whatever
// it is, that it may be a sandbox's being created. (The
// bind-mounted case runs on the real plugins, in node_test.go's
// namespaces.)
func TestWhichCachedNetNSIsTrusted(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "cni-unmounted")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cni-link") // ip netns users link /proc/<pid>/ns/net
	if err := os.Symlink(fmt.Sprintf("/proc/%d/ns/net", os.Getpid()), link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "cni-dangling")
	if err := os.Symlink("/proc/0/ns/net", dangling); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path          string
		gone, present bool
	}{
		{path: ""},
		{path: "relative/netns"},
		{path: "/proc/self/ns/net", present: true},                   // live, but of whatever process has the PID
		{path: "/proc/1/ns/net", present: true},                      // the same
		{path: "/proc/../proc/self/ns/net", present: true},           // cleaned first
		{path: "/proc/0/ns/net"},                                     // no such process here: from a PID namespace of its own, it says nothing
		{path: filepath.Join(dir, "cni-gone"), gone: true},           // removed with its sandbox
		{path: plain, present: true},                                 // unmounted, or its mount not seen here
		{path: link, present: true},                                  // a link into /proc: nsfs at its end, but of a PID
		{path: dangling, present: true},                              // the link is there: it is not known gone
		{path: filepath.Join(t.TempDir(), "no", "such", "dir", "x")}, // a directory not seen here says nothing
	} {
		assert.Empty(t, liveNetNS(tc.path), tc.path)
		assert.Equal(t, tc.gone, netnsGone(tc.path), "gone: %s", tc.path)
		assert.Equal(t, tc.present, netnsPresent(tc.path), "present: %s", tc.path)
	}
}

// doc.go: "A namespace is gone only when its path is, from a directory that is there". A cached path whose text is not
// clean is read as the system reads it: <dir>/L/../x, L a link to <root>/real/sub, opens <root>/real/x, which is
// there, while its text cleaned (<dir>/x) names a file that is not. It is present, and never gone; so is one with a
// trailing "/" or a ".", whatever they name.
func TestAnUncleanNamespacePathIsReadAsTheSystemReadsIt(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "netns")
	real := filepath.Join(root, "real")
	for _, d := range []string{dir, filepath.Join(real, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "sub"), filepath.Join(dir, "L")); err != nil {
		t.Fatal(err)
	}
	there := dir + "/L/../x"
	assert.False(t, netnsGone(there), "%s opens a file that is there: not gone", there)
	assert.True(t, netnsPresent(there), "%s opens a file that is there: present", there)
	for _, p := range []string{dir + "/gone/", dir + "/./gone", dir + "//gone", dir + "/L/../gone"} {
		assert.False(t, netnsGone(p), "%s is not clean: its text tells nothing sure", p)
	}
	assert.True(t, netnsGone(filepath.Join(dir, "gone")), "a clean path gone from a directory that is there is gone")
}

// doc.go: "It never runs a DEL in a network namespace it cannot trust", and "A /proc path never tells that a
// namespace is gone". A path the system follows through /proc at any step (a link to /proc/<pid>/root..., which it
// follows into that process's mount namespace while filepath.EvalSymlinks reads it as "/", or a link to
// /proc/<pid>/task followed by "..") names for a plugin what the collector cannot see: it is never passed to a DEL,
// never gone, and taken as there; a data directory reached so is not read.
func TestAPathThroughProcIsNeitherTrustedNorGone(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Symlink(fmt.Sprintf("/proc/%d/root%s", os.Getpid(), dir), root); err != nil {
		t.Fatal(err)
	}
	task := filepath.Join(dir, "task")
	if err := os.Symlink(fmt.Sprintf("/proc/%d/task", os.Getpid()), task); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "gone"), filepath.Join(root, "plain"), task + "/../ns/net"} {
		assert.True(t, throughProc(p), "%s goes through /proc", p)
		assert.Empty(t, liveNetNS(p), "%s is never passed to a DEL", p)
		assert.False(t, netnsGone(p), "%s is never gone", p)
		assert.True(t, netnsPresent(p), "%s is taken as there", p)
	}
	assert.False(t, throughProc(plain), "a plain path does not go through /proc")
	assert.False(t, throughProc(filepath.Join(dir, "missing", "x")), "a path that is not there ends the walk")
	assert.Empty(t, liveNetNS(dir+"/./plain"), "a path that is not clean is never passed to a DEL")
	_, _, err := readReservations(root)
	assert.Error(t, err, "a data directory reached through /proc is not read")
}
