package testcontainerd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/internal/testnode"
)

// What the node offers the tests that run programs as pods from their
// images and manifests: images imported into its containerd, connections
// from inside its network (to a pod's address), and the logs the kubelet
// writes of each container.

// ShellImage is the image `make containerd` writes beside the pause image
// (bin/containerd/busybox.tar, hack/containerd.mk names it the same): Debian's
// busybox-static, as /bin/busybox with /bin/sh beside it, for the init
// containers of manifests that run a shell (its sh runs its own applets
// without links). ImportImage imports it; it is never pulled.
const ShellImage = "podsweeper.test/busybox:1"

// ShellImageArchive returns the path of ShellImage's archive, or skips the
// test (fails it under CI=true) when it is not built.
func ShellImageArchive(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CONTAINERD_BIN_DIR")
	if dir == "" {
		testnode.Unavailable(t, "CONTAINERD_BIN_DIR is not set: run `make test`")
	}
	path := filepath.Join(dir, "busybox.tar")
	if _, err := os.Stat(path); err != nil {
		testnode.Unavailable(t, "%v: run `make containerd` (or `make test`)", err)
	}
	return path
}

// ImportImage imports the image archive at path (a docker archive, or an
// OCI layout as a tar, which keeps its manifest's digest) into the node's
// containerd, in the "k8s.io" namespace the CRI reads, from inside the
// node (ctr on /run/containerd/containerd.sock, reading the archive
// itself): as an operator without a registry loads an image on a node. The
// image keeps the name its archive gives it; with repository (the image's
// name without its tag, docker.io/library/... for a short name) it is
// also named repository@<its manifest's digest>, so that a pod naming the
// image by its digest runs it. containerd's root does not survive Reboot:
// import again after.
func (n *Node) ImportImage(t testing.TB, path, repository string) {
	t.Helper()
	start := time.Now()
	args := []string{"--address", "/run/containerd/containerd.sock", "-n", "k8s.io", "images", "import",
		"--platform", "linux/amd64", "--local"}
	if repository != "" {
		args = append(args, "--digests", "--base-name", repository)
	}
	n.Run(t, n.bins.ctr, append(args, path)...)
	t.Logf("node %s: %s imported in %v", n.Name, filepath.Base(path), time.Since(start).Round(time.Millisecond))
}

// DialContext connects to address (host:port) from inside the node's
// network namespace, where the pods' addresses are routed: what the
// kubelet's probes and a Prometheus on the node reach (HTTPClient's dialer,
// for a transport of the test's own: TLS, keep-alives). The connection is
// used from anywhere in the test.
func (n *Node) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return dialIn(ctx, n.netnsPath(), network, address)
}

// LogLine is one line of a container's log, as the kubelet wrote it.
type LogLine struct {
	// Time is when the runtime read the line from the container.
	Time time.Time
	// Stream is "stdout" or "stderr".
	Stream string
	// Text is the line, without its newline.
	Text string
}

// ContainerLog returns the log of the container named container of pod,
// every run of it in order (the kubelet keeps the last runs' files in
// /var/log/pods/<namespace>_<name>_<uid>/<container>/<restart>.log, in
// the CRI's format: "<RFC 3339 time> <stream> <F|P> <text>", P for a part
// of a longer line). Nothing yet: no lines.
func (n *Node) ContainerLog(t testing.TB, pod *corev1.Pod, container string) []LogLine {
	t.Helper()
	dir := filepath.Join(n.Dir, "var-log", "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var runs []int
	for _, e := range entries {
		if r, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log")); err == nil && strings.HasSuffix(e.Name(), ".log") {
			runs = append(runs, r)
		}
	}
	slices.Sort(runs)
	var lines []LogLine
	for _, r := range runs {
		lines = append(lines, readCRILog(t, filepath.Join(dir, strconv.Itoa(r)+".log"))...)
	}
	return lines
}

// readCRILog parses a log file in the CRI's format; the line being
// written (no newline yet) is left for the next read.
func readCRILog(t testing.TB, path string) []LogLine {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var lines []LogLine
	var partial strings.Builder
	r := bufio.NewReader(f)
	for {
		raw, err := r.ReadString('\n')
		if err != nil {
			break // the end, or a line not finished yet
		}
		ts, rest, ok1 := strings.Cut(strings.TrimSuffix(raw, "\n"), " ")
		stream, rest, ok2 := strings.Cut(rest, " ")
		tag, text, ok3 := strings.Cut(rest, " ")
		at, terr := time.Parse(time.RFC3339Nano, ts)
		require.True(t, ok1 && ok2 && ok3 && terr == nil, "%s: not a CRI log line: %q", path, raw)
		partial.WriteString(text)
		if tag == "P" {
			continue
		}
		lines = append(lines, LogLine{Time: at, Stream: stream, Text: partial.String()})
		partial.Reset()
	}
	return lines
}
