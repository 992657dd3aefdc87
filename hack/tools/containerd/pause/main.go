// Command pause-image writes the pause image of the tests' container node
// (internal/testcontainerd): a docker image tarball, as `ctr images
// import` reads it, of one layer holding a static binary at /pause, the
// image's entrypoint, for linux/amd64. The node's containerd pins it as
// its sandbox image, so nothing is ever pulled.
//
//	pause-image -binary bin/containerd/pause -tag podsweeper.test/pause:1 -o bin/containerd/pause.tar
//
// With -shell it writes the node's shell image the same way: the static
// binary (Debian's busybox-static) at /bin/busybox and /bin/sh a link to
// it, PATH=/bin, no entrypoint, sh as the command; busybox's sh runs its
// own applets (chmod, chown, ...) without links.
//
//	pause-image -shell -binary busybox -tag podsweeper.test/busybox:1 -o bin/containerd/busybox.tar
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	binary := flag.String("binary", "", "the static binary to put at /pause")
	tag := flag.String("tag", "", "the image's name, as the node's sandbox image names it")
	out := flag.String("o", "", "the tarball to write")
	shell := flag.Bool("shell", false, "write the shell image: the binary (busybox) at /bin/busybox, /bin/sh linked to it")
	flag.Parse()
	if err := write(*binary, *tag, *out, *shell); err != nil {
		fmt.Fprintln(os.Stderr, "pause-image:", err)
		os.Exit(1)
	}
}

func write(binary, tag, out string, shell bool) error {
	if binary == "" || tag == "" || out == "" {
		return errors.New("-binary, -tag and -o are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("the tag %q: %w", tag, err)
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	files := layerTar
	if shell {
		files = shellTar
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return files(b) })
	if err != nil {
		return fmt.Errorf("the layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	// Without os, architecture and an entrypoint, containerd can match the
	// image to no platform and run nothing.
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{"/pause"}
	if shell {
		cf.Config.Entrypoint = nil
		cf.Config.Cmd = []string{"sh"}
		cf.Config.Env = []string{"PATH=/bin"}
	}
	cf.Config.WorkingDir = "/"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	return os.Rename(tmp, out)
}

// layerTar returns a tar of one file, /pause, holding b; its time is fixed
// so that the same binary makes the same image.
func layerTar(b []byte) (io.ReadCloser, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	if err := w.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(b)),
		Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

// shellTar returns a tar of /bin (a directory), /bin/busybox holding b and
// /bin/sh linked to it, at fixed times.
func shellTar(b []byte) (io.ReadCloser, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, h := range []*tar.Header{
		{Name: "bin/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: epoch},
		{Name: "bin/busybox", Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg, ModTime: epoch},
		{Name: "bin/sh", Linkname: "busybox", Mode: 0o777, Typeflag: tar.TypeSymlink, ModTime: epoch},
	} {
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := w.Write(b); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}
