package testnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// HostState is what a node left to itself would change on the machine:
// the kernel settings the kubelet, containerd and the CNI plugins set, the
// directories they create outside their root dirs, the network links and
// the mounts.
type HostState struct {
	// Settings maps each watched /proc/sys file to its value ("" when it
	// cannot be read: not every kernel has every setting).
	Settings map[string]string
	// Trees maps each watched directory to what is in it, one line per
	// entry down to treeDepth ("dir x", "file x/y", "other x/z": names
	// only, for the files of /opt are the machine's to change), or to nil
	// when it does not exist.
	Trees map[string][]string
	// Links lists the network links of the host's namespace, as `ip -o
	// link` prints them, and Addresses their addresses, as `ip -o addr`
	// does.
	Links, Addresses []string
	// Mounts lists the mounts of /proc/self/mountinfo, one
	// "root mount-point fstype source" line each, sorted.
	Mounts []string
}

// hostTrees are the directories a node creates or writes outside its own
// when left to itself: the kubelet's (/var/lib/kubelet,
// /usr/libexec/kubernetes whatever its --root-dir), libmount's utab
// (/run/mount, written by mount(8) without -n), containerd's root, state
// and opt dirs, libcni's cache and the network namespaces' mount points.
var hostTrees = []string{
	"/var/lib/kubelet", "/usr/libexec/kubernetes", "/run/mount",
	"/var/lib/containerd", "/run/containerd", "/opt", "/opt/containerd",
	"/var/lib/cni", "/run/netns", "/var/run/netns", "/etc/cni",
}

// treeDepth bounds how deep ReadHost lists a watched directory, and
// treeEntries how many entries it lists of one: /opt may hold a machine's
// software, and an entry appearing or vanishing at its top is what counts.
const (
	treeDepth   = 3
	treeEntries = 2000
)

// watchedSettings are kernel settings of the host's namespaces that a node
// could change (the kubelet's are in hostSettings): forwarding, which the
// bridge plugin turns on, and limits that runtimes raise.
var watchedSettings = []string{
	"/proc/sys/net/ipv4/ip_forward",
	"/proc/sys/net/ipv4/conf/all/forwarding",
	"/proc/sys/net/ipv6/conf/all/forwarding",
	"/proc/sys/net/ipv4/conf/all/route_localnet",
	"/proc/sys/net/bridge/bridge-nf-call-iptables",
	"/proc/sys/fs/inotify/max_user_instances",
	"/proc/sys/fs/inotify/max_user_watches",
	"/proc/sys/kernel/keys/maxkeys",
	"/proc/sys/kernel/pid_max",
	"/proc/sys/vm/max_map_count",
}

// settingPaths returns every watched /proc/sys file.
func settingPaths() []string {
	var out []string
	for _, s := range hostSettings {
		out = append(out, s.path)
	}
	return append(out, watchedSettings...)
}

// ReadHost returns the host's state now.
func ReadHost(t testing.TB) HostState {
	t.Helper()
	h, err := ReadHostState()
	if err != nil {
		t.Fatalf("reading the host's state: %v", err)
	}
	return h
}

// ReadHostState returns the host's state now, for a caller without a test (a TestMain).
func ReadHostState() (HostState, error) {
	h := HostState{Settings: map[string]string{}, Trees: map[string][]string{}}
	for _, p := range settingPaths() {
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			h.Settings[p] = ""
		case err != nil:
			return h, fmt.Errorf("reading %s: %w", p, err)
		default:
			h.Settings[p] = strings.TrimSpace(string(b))
		}
	}
	for _, d := range hostTrees {
		tree, err := readTree(d)
		if err != nil {
			return h, err
		}
		h.Trees[d] = tree
	}
	out, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		return h, fmt.Errorf("ip -o link: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		if line = strings.TrimSpace(line); line != "" {
			h.Links = append(h.Links, line)
		}
	}
	slices.Sort(h.Links)
	if out, err = exec.Command("ip", "-o", "addr").Output(); err != nil {
		return h, fmt.Errorf("ip -o addr: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		if i := strings.Index(line, "valid_lft"); i >= 0 {
			line = strings.TrimRight(line[:i], " \\\t") // a lease's lifetimes count down
		}
		if line = strings.TrimSpace(line); line != "" {
			h.Addresses = append(h.Addresses, line)
		}
	}
	slices.Sort(h.Addresses)
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return h, fmt.Errorf("reading the mounts: %w", err)
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
	return h, nil
}

// readTree lists dir down to treeDepth; nil when it does not exist.
func readTree(dir string) ([]string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	tree := []string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while listed
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		depth := strings.Count(rel, string(filepath.Separator)) + 1
		if rel == "." {
			return nil
		}
		if len(tree) >= treeEntries {
			return filepath.SkipAll
		}
		if de.IsDir() {
			tree = append(tree, "dir "+rel)
			if depth >= treeDepth {
				return filepath.SkipDir
			}
			return nil
		}
		kind := "other "
		if de.Type().IsRegular() {
			kind = "file "
		}
		tree = append(tree, kind+rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	return tree, nil
}

// Diff describes how h differs from before, one change a line; "" when
// it does not.
func (h HostState) Diff(before HostState) string {
	var out []string
	for _, p := range settingPaths() {
		if h.Settings[p] != before.Settings[p] {
			out = append(out, p+": "+before.Settings[p]+" became "+h.Settings[p])
		}
	}
	for _, d := range hostTrees {
		was, is := before.Trees[d], h.Trees[d]
		switch {
		case was == nil && is != nil:
			out = append(out, d+" was created")
		case was != nil && is == nil:
			out = append(out, d+" was removed")
		}
		out = append(out, added(d+": ", is, was)...)
		out = append(out, removed(d+": ", is, was)...)
	}
	out = append(out, added("link ", h.Links, before.Links)...)
	out = append(out, removed("link ", h.Links, before.Links)...)
	out = append(out, added("address ", h.Addresses, before.Addresses)...)
	out = append(out, removed("address ", h.Addresses, before.Addresses)...)
	out = append(out, added("left mounted: ", h.Mounts, before.Mounts)...)
	out = append(out, removed("unmounted: ", h.Mounts, before.Mounts)...)
	return strings.Join(out, "\n")
}

// added returns the lines of now that were not in was, each after prefix;
// removed the lines of was no longer in now, marked so.
func added(prefix string, now, was []string) []string {
	var out []string
	for _, l := range now {
		if !slices.Contains(was, l) {
			out = append(out, prefix+"+ "+l)
		}
	}
	return out
}

func removed(prefix string, now, was []string) []string {
	var out []string
	for _, l := range was {
		if !slices.Contains(now, l) {
			out = append(out, prefix+"- "+l)
		}
	}
	return out
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
