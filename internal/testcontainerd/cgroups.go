package testcontainerd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// v1Controllers are the cgroup v1 controllers a hierarchy's mount options
// may name; other options (rw, clone_children, ...) are not remounted.
var v1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "net_cls", "net_prio",
	"blkio", "perf_event", "hugetlb", "pids", "rdma", "misc"}

// hierarchy is one cgroup hierarchy mounted under /sys/fs/cgroup.
type hierarchy struct {
	// mountPoint is where the host mounts it; name its base name, where
	// the node mounts it again.
	mountPoint, name string
	// v2: a cgroup2 mount (the unified hierarchy of a hybrid host).
	v2 bool
	// options are the v1 controllers (or name=...) it holds.
	options []string
	// node is the node's cgroup in it: a child of the test process's own.
	node string
}

// cgroups are the node's cgroups, one per hierarchy, and the symbolic
// links of /sys/fs/cgroup (cpu -> cpu,cpuacct) to make again inside.
type cgroups struct {
	hierarchies []hierarchy
	links       map[string]string
}

// newCgroups makes a cgroup called name in every hierarchy of the host,
// under the test process's own (so the host's tree is left as it was once
// they are removed), with cpuset's cpus and mems copied from its parent
// (without them no process may join it).
func newCgroups(t testing.TB, name string) *cgroups {
	t.Helper()
	mine, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	info, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	c := &cgroups{links: map[string]string{}}
	for line := range strings.Lines(string(info)) {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 0 || sep+3 >= len(f) || filepath.Dir(f[4]) != "/sys/fs/cgroup" {
			continue
		}
		h := hierarchy{mountPoint: f[4], name: filepath.Base(f[4])}
		switch f[sep+1] {
		case "cgroup2":
			h.v2 = true
		case "cgroup":
			for _, o := range strings.Split(f[sep+3], ",") {
				if slices.Contains(v1Controllers, o) || strings.HasPrefix(o, "name=") {
					h.options = append(h.options, o)
				}
			}
		default:
			continue
		}
		path, ok := ownPath(string(mine), h)
		require.True(t, ok, "the test process's cgroup in %s", h.mountPoint)
		h.node = filepath.Join(h.mountPoint, path, name)
		require.NoError(t, os.Mkdir(h.node, 0o755), "creating the node's cgroup")
		c.hierarchies = append(c.hierarchies, h)
		if slices.Contains(h.options, "cpuset") {
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(filepath.Dir(h.node), file))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(h.node, file), b, 0o644))
			}
		}
	}
	require.NotEmpty(t, c.hierarchies, "no cgroup hierarchy under /sys/fs/cgroup")
	entries, err := os.ReadDir("/sys/fs/cgroup")
	require.NoError(t, err)
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(filepath.Join("/sys/fs/cgroup", e.Name()))
			require.NoError(t, err)
			c.links[e.Name()] = target
		}
	}
	return c
}

// ownPath returns the test process's cgroup in h, from /proc/self/cgroup
// ("id:controllers:path" lines; "0::path" for cgroup2).
func ownPath(self string, h hierarchy) (string, bool) {
	for line := range strings.Lines(self) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if h.v2 {
			if parts[0] == "0" && parts[1] == "" {
				return parts[2], true
			}
			continue
		}
		ctrl := strings.Split(parts[1], ",")
		slices.Sort(ctrl)
		opts := slices.Clone(h.options)
		slices.Sort(opts)
		if slices.Equal(ctrl, opts) {
			return parts[2], true
		}
	}
	return "", false
}

// procs returns the cgroup.procs file of the node's cgroup in every
// hierarchy: a process that writes its PID in each has joined the node.
func (c *cgroups) procs() []string {
	var out []string
	for _, h := range c.hierarchies {
		out = append(out, filepath.Join(h.node, "cgroup.procs"))
	}
	return out
}

// mountScript returns the commands that mount every hierarchy again on
// the node's /sys/fs/cgroup (a tmpfs): seen from the node's cgroup
// namespace, each shows the node's cgroup as its root.
func (c *cgroups) mountScript() []string {
	var out []string
	for _, h := range c.hierarchies {
		dir := quote(filepath.Join("/sys/fs/cgroup", h.name))
		if h.v2 {
			out = append(out, "mkdir -p "+dir, "mount -n -t cgroup2 cgroup2 "+dir)
			continue
		}
		opts := strings.Join(h.options, ",")
		if len(h.options) == 1 && strings.HasPrefix(h.options[0], "name=") {
			opts = "none," + opts
		}
		out = append(out, "mkdir -p "+dir, "mount -n -t cgroup -o "+opts+" cgroup "+dir)
	}
	for name, target := range c.links {
		out = append(out, "ln -s "+quote(target)+" "+quote(filepath.Join("/sys/fs/cgroup", name)))
	}
	return out
}

// remove removes the node's cgroups, deepest first, once the processes in
// them are gone (a killed process leaves its cgroup a moment later),
// trying for at most timeout.
func (c *cgroups) remove(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.removeOnce()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cgroups) removeOnce() error {
	var errs []error
	for _, h := range c.hierarchies {
		var dirs []string
		err := filepath.WalkDir(h.node, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// WalkDir lists a directory before its children: remove in reverse.
		for _, d := range slices.Backward(dirs) {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeChildren removes the node's cgroups below its own (those runc
// made), deepest first: what a reboot leaves of the containers' cgroups.
func (c *cgroups) removeChildren() error {
	var errs []error
	for _, h := range c.hierarchies {
		var dirs []string
		_ = filepath.WalkDir(h.node, func(p string, de fs.DirEntry, err error) error {
			if err == nil && de.IsDir() && p != h.node {
				dirs = append(dirs, p)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}
