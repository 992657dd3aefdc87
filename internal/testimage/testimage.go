package testimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Image is the one image of an OCI layout.
type Image struct {
	// Digest is its manifest's digest; ConfigDigest its config's.
	Digest, ConfigDigest string
	// Config is its config blob.
	Config []byte
	// Layers are its layers' digests, in order.
	Layers []string
	dir    string
}

// Read reads the one image of the OCI layout at dir, failing t unless the
// layout holds exactly one.
func Read(t testing.TB, dir string) Image {
	t.Helper()
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &index), "%s/index.json", dir)
	require.Len(t, index.Manifests, 1, "%s/index.json: one image", dir)
	img := Image{Digest: index.Manifests[0].Digest, dir: dir}
	var manifest struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
		Layers []struct {
			Digest string `json:"digest"`
		} `json:"layers"`
	}
	require.NoError(t, json.Unmarshal(img.Blob(t, img.Digest), &manifest), "the manifest %s", img.Digest)
	img.ConfigDigest = manifest.Config.Digest
	img.Config = img.Blob(t, img.ConfigDigest)
	for _, l := range manifest.Layers {
		img.Layers = append(img.Layers, l.Digest)
	}
	return img
}

// Blob returns the blob of that digest.
func (img Image) Blob(t testing.TB, digest string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(img.dir, "blobs", strings.Replace(digest, ":", "/", 1)))
	require.NoError(t, err)
	return b
}

// Walk calls each with every entry of every layer, in order, and a reader
// of its content; layer is the layer's digest.
func (img Image) Walk(t testing.TB, each func(layer string, hdr *tar.Header, content io.Reader)) {
	t.Helper()
	for _, l := range img.Layers {
		zr, err := gzip.NewReader(bytes.NewReader(img.Blob(t, l)))
		require.NoError(t, err, "the layer %s", l)
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, "the layer %s", l)
			each(l, hdr, tr)
		}
	}
}
