package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/internal/testimage"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// containerd (v2.4.2, the tests' node: internal/testcontainerd's
// TestPodsNetNS) pins a sandbox's network namespace at
// /var/run/netns/cni-<uuid> and caches that path in libcni's entries; on
// the host /var/run is a link to /run. adapters/cni: "The collector must
// run where the plugins would: ... the directory of the pods' network
// namespaces (/run/netns) at the same paths", and "A namespace is gone
// only when its path is": in the collector's pod the cached path
// /var/run/netns/cni-<uuid> must name the host's /run/netns/cni-<uuid>,
// or every sandbox the runtime does not list (one it is creating: listed
// only after ADD, create and start) reads as dead (SandboxDead true,
// DestroyPU(SandboxChanged|SandboxDead) frees it, ErrSandboxRunning never
// keeps it). The DaemonSet mounts /run/netns only; the image
// ($CNI_GC_IMAGE) has /var but no /var/run (and the kubelet's
// ServiceAccount token mount, /var/run/secrets/..., makes runc create
// /var/run as a plain directory).
func TestThePodSeesContainerdsCachedNetNSPathsAtTheirPath(t *testing.T) {
	var ds appsv1.DaemonSet
	testkube.ReadManifest(t, "deploy", "daemonset.yaml", &ds)
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/var/run/netns" || m.MountPath == "/var/run" {
				return // mounted at containerd's path
			}
		}
	}
	layout := os.Getenv("CNI_GC_IMAGE")
	if layout == "" {
		t.Skip("CNI_GC_IMAGE is not set: run `make images`")
	}
	var varRun string
	testimage.Read(t, layout).Walk(t, func(_ string, hdr *tar.Header, _ io.Reader) {
		if filepath.Clean(hdr.Name) == "var/run" {
			varRun = string(hdr.Typeflag) + " -> " + hdr.Linkname
		}
	})
	require.True(t, varRun == string(tar.TypeSymlink)+" -> /run" || varRun == string(tar.TypeSymlink)+" -> ../run",
		"containerd's cached netns paths (/var/run/netns/cni-...) do not exist in the collector's pod: the DaemonSet mounts /run/netns only, and the image's /var/run is %q (none: a plain directory runc makes for the token mount); every sandbox the runtime does not list reads as dead", varRun)
}
