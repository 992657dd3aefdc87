package testnode

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// HostState is what a kubelet left to itself would change on the machine:
// the kernel settings it sets, the directories it creates outside its root
// dir, and the mounts.
type HostState struct {
	// Settings maps each /proc/sys file the kubelet writes to its value.
	Settings map[string]string
	// Dirs maps each directory the kubelet creates to whether it exists.
	Dirs map[string]bool
	// Mounts lists the mounts of /proc/self/mountinfo, one
	// "root mount-point fstype source" line each, sorted.
	Mounts []string
}

// hostDirs are the directories a kubelet creates whatever its --root-dir.
var hostDirs = []string{"/var/lib/kubelet", "/usr/libexec/kubernetes"}

// ReadHost returns the host's state now.
func ReadHost(t testing.TB) HostState {
	t.Helper()
	h := HostState{Settings: map[string]string{}, Dirs: map[string]bool{}}
	for _, s := range hostSettings {
		b, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatalf("reading the host's %s: %v", s.path, err)
		}
		h.Settings[s.path] = strings.TrimSpace(string(b))
	}
	for _, d := range hostDirs {
		_, err := os.Stat(d)
		h.Dirs[d] = err == nil
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("reading the mounts: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+2 >= len(f) {
			continue
		}
		h.Mounts = append(h.Mounts, strings.Join([]string{f[3], f[4], f[sep+1], f[sep+2]}, " "))
	}
	slices.Sort(h.Mounts)
	return h
}

// Diff describes how h differs from before, one change a line; "" when
// it does not.
func (h HostState) Diff(before HostState) string {
	var out []string
	for _, s := range hostSettings {
		if h.Settings[s.path] != before.Settings[s.path] {
			out = append(out, s.path+": "+before.Settings[s.path]+" became "+h.Settings[s.path])
		}
	}
	for _, d := range hostDirs {
		if h.Dirs[d] && !before.Dirs[d] {
			out = append(out, d+" was created")
		}
	}
	for _, m := range h.Mounts {
		if !slices.Contains(before.Mounts, m) {
			out = append(out, "left mounted: "+m)
		}
	}
	for _, m := range before.Mounts {
		if !slices.Contains(h.Mounts, m) {
			out = append(out, "unmounted: "+m)
		}
	}
	return strings.Join(out, "\n")
}

// WatchHost reads the host's state now and, when the test ends (after the
// nodes it starts later have stopped), fails it if the state changed.
func WatchHost(t testing.TB) {
	t.Helper()
	before := ReadHost(t)
	t.Cleanup(func() {
		if d := ReadHost(t).Diff(before); d != "" {
			t.Errorf("the host changed during the test:\n%s", d)
		}
	})
}
