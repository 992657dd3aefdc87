// Command pause-image writes the pause image of the tests' container node
// (internal/testcontainerd): a docker image tarball, as `ctr images
// import` reads it, of one layer holding a static binary at /pause, the
// image's entrypoint, for linux/amd64. The node's containerd pins it as
// its sandbox image, so nothing is ever pulled.
//
//	pause-image -binary bin/containerd/pause -tag podsweeper.test/pause:1 -o bin/containerd/pause.tar
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
	flag.Parse()
	if err := write(*binary, *tag, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pause-image:", err)
		os.Exit(1)
	}
}

func write(binary, tag, out string) error {
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
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(b) })
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
