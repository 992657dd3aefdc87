package testkube

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Pinned matches an image reference fixed by the digest of its content.
var Pinned = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// AssertBaseImagesPinned checks that the Dockerfile at path has stages FROM
// lines and that every one of them names its image by digest, so that a
// tag moved upstream never changes what ships.
func AssertBaseImagesPinned(t *testing.T, path string, stages int) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	froms := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		froms++
		assert.Regexp(t, Pinned, f[1], "base image not pinned by digest")
	}
	assert.Equal(t, stages, froms, "FROM lines in %s", path)
}

// ReadManifest decodes the manifest dir/name into into, strictly: a field
// the type does not have is an error, as kubectl's validation would say.
func ReadManifest(t *testing.T, dir, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, into), name)
}
