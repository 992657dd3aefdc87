package cni_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The tests that run the real CNI plugins (bridge, host-local, loopback,
// built by `make cni-plugins` into CNI_PLUGINS_DIR) run them inside a
// private network and mount namespace, so that the host's links,
// addresses, /var/lib/cni, /run/netns and /etc/cni are never touched:
// TestMain re-executes the test binary with CLONE_NEWNET|CLONE_NEWNS, and
// the child makes / private, mounts a tmpfs over /var/lib and /run (before
// creating /var/lib/cni and /run/netns in them, which would otherwise be
// created on the host's disk), brings lo up, starts the API server there
// and runs the tests. The parent reads the host's state before and after,
// and fails the run if anything changed.

// insideEnv is set in the child that runs inside the namespaces.
const insideEnv = "PODSWEEPER_CNI_IN_NETNS"

// suite is what TestMain prepared; a test asks for it with needNode or
// needAPI.
var suite struct {
	// noNetNS says why the real-plugin tests cannot run ("" when they can).
	noNetNS string
	// plugins is the directory of the built plugins.
	plugins string
	// noAPI says why the API server is not available ("" when it is).
	noAPI  string
	cfg    *rest.Config
	client client.Client
}

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	if os.Getenv(insideEnv) == "1" {
		os.Exit(inside(m))
	}
	os.Exit(outside(m))
}

// outside runs the tests in the child when the namespaces can be made,
// and checks the host around it; otherwise here, with the real-plugin
// tests skipped.
func outside(m *testing.M) int {
	if os.Geteuid() != 0 {
		suite.noNetNS = "not root: a private network and mount namespace cannot be made"
		return m.Run()
	}
	before, err := readHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the host's state:", err)
		return 1
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	code := 0
	if err := cmd.Start(); err != nil {
		suite.noNetNS = "cannot make a private network and mount namespace: " + err.Error()
		return m.Run()
	}
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(os.Stderr, "running the tests in a private namespace:", err)
			return 1
		}
		code = exit.ExitCode()
	}
	after, err := readHost()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the host's state:", err)
		return 1
	}
	if d := diffHost(before, after); d != "" {
		fmt.Fprintf(os.Stderr, "FAIL: the host changed while the CNI tests ran:\n%s\n", d)
		return 1
	}
	return code
}

// inside prepares the namespaces and the API server, and runs the tests.
func inside(m *testing.M) int {
	if err := prepareNamespaces(); err != nil {
		fmt.Fprintln(os.Stderr, "preparing the private namespaces:", err)
		return 1
	}
	suite.plugins = os.Getenv("CNI_PLUGINS_DIR")
	if suite.plugins == "" {
		suite.plugins, _ = filepath.Abs("../../bin/cni")
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(suite.plugins, p)); err != nil {
			suite.noNetNS = fmt.Sprintf("no %s plugin in %s: run `make cni-plugins` (or `make test`)", p, suite.plugins)
		}
	}
	stop, err := startAPI()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver and etcd:", err)
		return 1
	}
	code := m.Run()
	stop()
	return code
}

// prepareNamespaces makes the child's mounts its own, puts tmpfs over
// /var/lib and /run, creates /var/lib/cni and /run/netns in them, and
// brings lo up.
func prepareNamespaces() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	for _, d := range []string{"/var/lib", "/run"} {
		if err := unix.Mount("tmpfs", d, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("mounting a tmpfs over %s: %w", d, err)
		}
	}
	for _, d := range []string{"/var/lib/cni", "/run/netns"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return linkUp("lo")
}

// linkUp sets the interface name up.
func linkUp(name string) error {
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

// startAPI starts a real kube-apiserver and etcd inside the namespace,
// when KUBEBUILDER_ASSETS holds them.
func startAPI() (stop func(), err error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); assets == "" || err != nil {
			suite.noAPI = "KUBEBUILDER_ASSETS does not hold kube-apiserver and etcd: run the tests with `make test`"
			return func() {}, nil
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	// The namespace has no default route, from which kube-apiserver would
	// pick the address it advertises; a loopback one it accepts only
	// without the endpoint reconciler (the kubernetes Service's
	// endpoints, which nothing here reads).
	env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "127.0.0.1").Set("endpoint-reconciler-type", "none")
	if os.Getenv("DEBUG_ENVTEST") != "" {
		env.ControlPlane.GetAPIServer().Out = os.Stderr
		env.ControlPlane.GetAPIServer().Err = os.Stderr
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	suite.cfg, suite.client = cfg, c
	return func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}, nil
}

// needNetNS skips t when the real plugins cannot run in a private
// namespace, and fails it instead under CI=true.
func needNetNS(tb testing.TB) {
	tb.Helper()
	if suite.noNetNS == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal(suite.noNetNS)
	}
	tb.Skip(suite.noNetNS)
}

// needAPI is needNetNS, and the API server too.
func needAPI(tb testing.TB) {
	tb.Helper()
	needNetNS(tb)
	if suite.noAPI == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal(suite.noAPI)
	}
	tb.Skip(suite.noAPI)
}

// hostState is what the CNI plugins would change on a host: its links
// and their addresses, the CNI and netns directories, and the mounts.
type hostState struct {
	lines []string
}

// hostDirs are the directories the plugins and libcni write to.
var hostDirs = []string{"/var/lib/cni", "/run/netns", "/var/run/netns", "/etc/cni"}

// readHost reads the host's links, addresses, CNI directories (every file
// with its size and mode) and mounts.
func readHost() (hostState, error) {
	var h hostState
	ifs, err := net.Interfaces()
	if err != nil {
		return h, err
	}
	for _, i := range ifs {
		h.lines = append(h.lines, fmt.Sprintf("link %s index %d mtu %d hw %s", i.Name, i.Index, i.MTU, i.HardwareAddr))
		addrs, err := i.Addrs()
		if err != nil {
			return h, err
		}
		for _, a := range addrs {
			h.lines = append(h.lines, fmt.Sprintf("address %s on %s", a, i.Name))
		}
	}
	for _, d := range hostDirs {
		err := filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := de.Info()
			if err != nil {
				return err
			}
			if de.IsDir() {
				h.lines = append(h.lines, fmt.Sprintf("dir %s %v", p, info.Mode()))
				return nil
			}
			h.lines = append(h.lines, fmt.Sprintf("file %s %v %d bytes, written %s", p, info.Mode(), info.Size(), info.ModTime().UTC().Format(time.RFC3339Nano)))
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			h.lines = append(h.lines, "absent "+d)
			continue
		}
		if err != nil {
			return h, err
		}
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return h, err
	}
	for line := range strings.Lines(string(b)) {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+2 >= len(f) {
			continue
		}
		h.lines = append(h.lines, "mount "+strings.Join([]string{f[3], f[4], f[sep+1], f[sep+2]}, " "))
	}
	slices.Sort(h.lines)
	return h, nil
}

// diffHost describes what changed from before to after, a line each.
func diffHost(before, after hostState) string {
	var out []string
	for _, l := range after.lines {
		if !slices.Contains(before.lines, l) {
			out = append(out, "+ "+l)
		}
	}
	for _, l := range before.lines {
		if !slices.Contains(after.lines, l) {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}
