package cni_test

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/internal/testimage"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// The plugins that change the node's netfilter rules call iptables: the
// bridge plugin with "ipMasq": true (a chain and a POSTROUTING rule per
// sandbox) and portmap (its DNAT chains), on ADD and on DEL. cni-gc runs
// them from its image, which carries iptables from the Debian packages
// pinned in hack/tools/images/debian.lock (`make images`): this machine
// has no iptables of its own. The test gives the plugins that image's
// iptables, run in the image's own file system (chroot, in the test's
// private mount namespace), so that a DEL here is what the collector's DEL
// is in its pod.

// imageIptables unpacks the cni-gc image ($CNI_GC_IMAGE, an OCI layout)
// and puts iptables wrappers that run the image's in a directory first on
// $PATH, which libcni hands to the plugins. It skips the test without the
// image, or fails it under CI=true.
func imageIptables(t *testing.T) {
	t.Helper()
	layout := os.Getenv("CNI_GC_IMAGE")
	if layout == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CNI_GC_IMAGE is not set: run the tests with `make test`")
		}
		t.Skip("CNI_GC_IMAGE is not set: run `make test` (make images builds it)")
	}
	root := filepath.Join("/var/lib/cni-test", "image")
	require.NoError(t, os.RemoveAll(root))
	unpackImage(t, layout, root)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	// The DaemonSet mounts the host's /run/xtables.lock there.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "run"), 0o755))

	bin := t.TempDir()
	for _, cmd := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		_, err := os.Lstat(filepath.Join(root, "usr/sbin", cmd))
		require.NoError(t, err, "the image has no /usr/sbin/%s", cmd)
		script := fmt.Sprintf("#!/bin/sh\nexec chroot %s /usr/sbin/%s \"$@\"\n", root, cmd)
		require.NoError(t, os.WriteFile(filepath.Join(bin, cmd), []byte(script), 0o755))
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	out, err := exec.Command("iptables", "--version").CombinedOutput()
	require.NoError(t, err, "the image's iptables runs: %s", out)
	require.Contains(t, string(out), "nf_tables", "the image's iptables is the nft variant")
}

// unpackImage writes the files of every layer of the one image of the OCI
// layout at dir into root.
func unpackImage(t *testing.T, dir, root string) {
	t.Helper()
	testimage.Read(t, dir).Walk(t, func(_ string, hdr *tar.Header, content io.Reader) {
		name := filepath.Clean(hdr.Name)
		require.False(t, strings.HasPrefix(name, "..") || filepath.IsAbs(name) || strings.Contains(name, ".wh."), "entry %q", hdr.Name)
		path := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		switch hdr.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(path, os.FileMode(hdr.Mode).Perm()))
		case tar.TypeReg:
			data, err := io.ReadAll(content)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, data, os.FileMode(hdr.Mode).Perm()))
		case tar.TypeSymlink:
			require.NoError(t, os.Symlink(hdr.Linkname, path))
		case tar.TypeLink:
			require.NoError(t, os.Link(filepath.Join(root, filepath.Clean(hdr.Linkname)), path))
		default:
			t.Fatalf("entry %q of type %q", hdr.Name, hdr.Typeflag)
		}
	})
}

// natRules returns the lines of the nat table that name sb (the rules and
// chains its ADDs made), through the image's iptables-save.
func natRules(t *testing.T, sb *sandbox) []string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var lines []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, sb.ID) || strings.Contains(line, fmt.Sprintf("--dport %d ", sb.HostPort)) {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}

// portmapRule reports whether a line of natRules is portmap's (its DNAT
// chain and the rules to it), not the bridge plugin's masquerade.
func portmapRule(line string) bool {
	return strings.Contains(line, "CNI-DN-") || strings.Contains(line, "--dport")
}

// TestIPMasqNetworkIsFreedWithTheImagesIptables: a pod on a bridge network
// with ipMasq and portmap, deleted without a DEL, is freed by the
// collector with the image's iptables: its address, veth and cache entry,
// and the netfilter rules its ADD made; a live pod's rules stay. With the
// sandbox's network namespace gone (a node's reboot), the bridge plugin
// v1.10.0 releases the address only and leaves its masquerade rules (it
// tears them down for the addresses it reads in that namespace), while
// portmap still removes its port forwarding.
func TestIPMasqNetworkIsFreedWithTheImagesIptables(t *testing.T) {
	needAPI(t)
	imageIptables(t)
	for _, tc := range []struct {
		name      string
		netnsGone bool
	}{
		{name: "its network namespace still there", netnsGone: false},
		{name: "its network namespace gone with the sandbox", netnsGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			n.nets[1].ipMasq, n.nets[1].portMap = true, true
			p := n.createPod("web")
			sb := n.add(p)
			other := n.add(n.createPod("other"))
			rules := natRules(t, sb)
			require.True(t, slices.ContainsFunc(rules, portmapRule), "the ADD made port-forwarding rules: %q", rules)
			require.True(t, slices.ContainsFunc(rules, func(l string) bool { return !portmapRule(l) }), "and masquerade rules: %q", rules)
			otherRules := natRules(t, other)
			require.NotEmpty(t, otherRules)

			deletePod(t, p)
			runtime := &currentSandboxes{}
			runtime.set(other.Pod, other)
			if tc.netnsGone {
				n.removeNetNS(sb)
			} else {
				runtime.stop(p, sb) // its DEL never ran
			}
			a := n.startAgent(agentOptions{sandboxes: runtime, runtime: runtime})
			eventually(t, freeTimeout, func() bool { return n.freed(sb) }, "the attachments of the deleted pod freed")
			a.settle(t)
			n.requireFreed(sb)
			left := natRules(t, sb)
			require.False(t, slices.ContainsFunc(left, portmapRule), "portmap's DEL removed the port forwarding: %q", left)
			if tc.netnsGone {
				require.NotEmpty(t, left, "bridge v1.10.0 leaves the masquerade rules of a sandbox whose namespace is gone")
			} else {
				require.Empty(t, left, "bridge's DEL removed the masquerade rules")
			}
			require.Equal(t, otherRules, natRules(t, other), "the live pod's rules are untouched")
			n.requireIntact(other)
			require.Equal(t, 1, a.events.count(deletion.EventDestroyed, p), "one destroy")
			require.Equal(t, ports.ReasonPodGone, a.events.destroyed(t, p).Reason)
		})
	}
}
