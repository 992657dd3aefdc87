// Package privatens runs a package's tests in private network and mount
// namespaces, so that the real components they start (the CNI plugins,
// kube-apiserver, network namespaces of their own) never touch the host's
// links, addresses, mounts or directories; and it checks that they did
// not.
//
// A TestMain calls Run. The test binary runs again as a child with
// CLONE_NEWNET|CLONE_NEWNS|CLONE_NEWPID and env set to "1" (the child is its
// PID namespace's init: whatever it started ends with it, a test's panic or
// a timeout included); in the child, Run calls
// Prepare (/ made private, a tmpfs over /var/lib and /run, /var/lib/cni
// and /run/netns made in them, its own /proc, lo up), then the package's
// inside. The
// parent reads the host's state (testnode.HostState) before and after the
// child, and fails the run when it changed. Without root, or where the
// namespaces cannot be made, the parent runs the package's outside with
// the reason, which skips what needs them (and fails it under CI=true).
package privatens

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podsweeper/podsweeper/internal/testnode"
)

// Run is a TestMain's body: it returns the exit status of the tests, run
// by inside in the child (env "1"), or by outside(reason) here when the
// namespaces cannot be made.
func Run(env string, inside func() int, outside func(reason string) int) int {
	if Inside(env) {
		if err := Prepare(); err != nil {
			fmt.Fprintln(os.Stderr, "preparing the private namespaces:", err)
			return 1
		}
		return inside()
	}
	if os.Geteuid() != 0 {
		return outside("not root: a private network and mount namespace cannot be made")
	}
	before, err := testnode.ReadHostState()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the host's state:", err)
		return 1
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = os.Args // the child's os.Args[0] is the test binary's path, which a test may run again
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// A private PID namespace too, the child its init: when the child ends, however (a test's panic, the test
	// binary's timeout, this process killed: Pdeathsig), the kernel kills every process left in it, so that no
	// kube-apiserver, etcd or plugin a test started outlives the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return outside("cannot make a private network and mount namespace: " + err.Error())
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(os.Stderr, "running the tests in a private namespace:", err)
			return 1
		}
		code = exit.ExitCode()
	}
	after, err := testnode.ReadHostState()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the host's state:", err)
		return 1
	}
	if d := after.Diff(before); d != "" {
		fmt.Fprintf(os.Stderr, "FAIL: the host changed while the tests ran in private namespaces:\n%s\n", d)
		return 1
	}
	return code
}

// Inside reports whether this process is the child Run started (env "1").
func Inside(env string) bool { return os.Getenv(env) == "1" }

// Prepare makes the child's mounts its own, puts a tmpfs over /var/lib and
// /run, creates /var/lib/cni and /run/netns in them, mounts its PID
// namespace's /proc, and brings lo up.
func Prepare() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	for _, d := range []string{"/var/lib", "/run"} {
		if err := unix.Mount("tmpfs", d, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("mounting a tmpfs over %s: %w", d, err)
		}
	}
	// The child's own PID namespace's /proc: /proc/<pid> and /proc/self name its processes by the pids they see.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting its PID namespace's /proc: %w", err)
	}
	for _, d := range []string{"/var/lib/cni", "/run/netns"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return LinkUp("lo")
}

// LinkUp sets the interface name up.
func LinkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading the flags of %s: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("setting %s up: %w", name, err)
	}
	return nil
}
