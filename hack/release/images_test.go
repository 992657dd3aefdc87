package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/internal/testimage"
)

// programs are the deployable programs, with the user their image runs
// them as (cni-gc: root, for the plugins it runs; hack/images.sh says why).
var programs = map[string]string{"node-agent": "65532:65532", "cluster-controller": "65532:65532", "cni-gc": "0:0"}

// imagesEnv is what hack/images.sh needs from `make test`: the tools and
// the Debian packages it built. Without them the test is skipped, or fails
// under CI=true.
func imagesEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, k := range []string{"IMAGES_TOOL", "SBOM_TOOL", "DEBS_DIR"} {
		v := os.Getenv(k)
		if v == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set: run the tests with `make test`", k)
			}
			t.Skipf("%s is not set: run `make test` to build the images", k)
		}
		env = append(env, k+"="+v)
	}
	return env
}

// repoRoot is the work tree these tests run in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	return root
}

// git runs git in dir and returns its output, trimmed.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// cleanClone clones the commit the work tree is at into a new directory.
func cleanClone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "podsweeper")
	head := git(t, repoRoot(t), "rev-parse", "HEAD") // before the clone, which then holds it
	git(t, repoRoot(t), "clone", "-q", "--no-hardlinks", repoRoot(t), dir)
	git(t, dir, "checkout", "-q", head)
	return dir
}

// buildImages runs hack/images.sh in the clone dir and returns its
// digests.txt.
func buildImages(t *testing.T, dir string, env []string) string {
	t.Helper()
	cmd := exec.Command("hack/images.sh")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "IMAGES_DIR="+filepath.Join(dir, "bin/images"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(t, cmd.Run(), "hack/images.sh in %s:\n%s", dir, out.String())
	t.Logf("hack/images.sh in %s: %v", dir, time.Since(start).Round(time.Second))
	b, err := os.ReadFile(filepath.Join(dir, "bin/images/digests.txt"))
	require.NoError(t, err)
	return string(b)
}

// TestImagesAreReproducible builds the images of this commit in a clean
// clone, and compares them with those of a second clean clone: the
// checkout `make test` runs in when it is clean, at this commit, and has
// built them (as on CI), or a second clone. Same digests, same SBOMs, and
// no path of the machine in any binary. The first clone's images are
// then checked by checkImage.
func TestImagesAreReproducible(t *testing.T) {
	env := imagesEnv(t)
	a := cleanClone(t)
	digestsA := buildImages(t, a, env)

	root := repoRoot(t)
	b := filepath.Join(root, "bin/images")
	if reason := stale(t, root); reason != "" {
		t.Logf("building a second clone: the images of %s are not those of a clean checkout of this commit (%s)", root, reason)
		b = filepath.Join(cleanClone(t), "bin/images")
		buildImages(t, filepath.Dir(filepath.Dir(b)), env)
	}
	digestsB, err := os.ReadFile(filepath.Join(b, "digests.txt"))
	require.NoError(t, err)
	assert.Equal(t, digestsA, string(digestsB), "two clean checkouts of one commit build the same images")
	for name := range programs {
		sbomA, err := os.ReadFile(filepath.Join(a, "bin/images", name+".cdx.json"))
		require.NoError(t, err)
		sbomB, err := os.ReadFile(filepath.Join(b, name+".cdx.json"))
		require.NoError(t, err)
		assert.Equal(t, string(sbomA), string(sbomB), "%s's SBOM", name)

		bin, err := os.ReadFile(filepath.Join(a, "bin/images", name+".bin"))
		require.NoError(t, err)
		for _, p := range []string{a, root, goEnv(t, "GOMODCACHE"), goEnv(t, "GOROOT")} {
			assert.False(t, bytes.Contains(bin, []byte(p)), "%s holds the path %s", name, p)
		}
	}
	commit := git(t, a, "rev-parse", "HEAD")
	commitTime := git(t, a, "log", "-1", "--format=%ct")
	for name, user := range programs {
		t.Run(name, func(t *testing.T) {
			checkImage(t, filepath.Join(a, "bin/images"), name, user, commit, commitTime, digestsA)
		})
	}
}

// stale says why the images in root's bin/images are not those of a clean
// checkout of its HEAD ("" when they are).
func stale(t *testing.T, root string) string {
	t.Helper()
	if st := git(t, root, "status", "--porcelain"); st != "" {
		return "the work tree has changes"
	}
	head := git(t, root, "rev-parse", "HEAD")
	for name := range programs {
		out, err := exec.Command("go", "version", "-m", filepath.Join(root, "bin/images", name+".bin")).Output()
		if err != nil {
			return "no " + name + " image"
		}
		if !strings.Contains(string(out), "vcs.revision="+head) || !strings.Contains(string(out), "vcs.modified=false") {
			return name + "'s binary is of another commit or tree"
		}
	}
	if _, err := os.Stat(filepath.Join(root, "bin/images/digests.txt")); err != nil {
		return "no digests.txt"
	}
	return ""
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// ociImage is what checkImage reads of an OCI layout.
type ociImage struct {
	digest, configDigest string
	config               struct {
		Architecture string    `json:"architecture"`
		OS           string    `json:"os"`
		Created      time.Time `json:"created"`
		Config       struct {
			User       string            `json:"User"`
			Entrypoint []string          `json:"Entrypoint"`
			Env        []string          `json:"Env"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
	}
	// files are the regular files of every layer, by path.
	files map[string][]byte
	// links are the symbolic links, by path.
	links map[string]string
}

// tarFile returns the content of the file name in the tar at path.
func tarFile(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		require.NoError(t, err, "%s in %s", name, path)
		if hdr.Name == name {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			return string(b)
		}
	}
}

// readLayout reads the one image of the OCI layout at dir.
func readLayout(t *testing.T, dir string) ociImage {
	t.Helper()
	l := testimage.Read(t, dir)
	img := ociImage{digest: l.Digest, configDigest: l.ConfigDigest, files: map[string][]byte{}, links: map[string]string{}}
	require.NoError(t, json.Unmarshal(l.Config, &img.config))
	names := map[string][]string{}
	l.Walk(t, func(layer string, hdr *tar.Header, content io.Reader) {
		names[layer] = append(names[layer], hdr.Name)
		switch hdr.Typeflag {
		case tar.TypeReg:
			b, err := io.ReadAll(content)
			require.NoError(t, err)
			img.files[hdr.Name] = b
		case tar.TypeSymlink:
			img.links[hdr.Name] = hdr.Linkname
		}
	})
	for _, layer := range l.Layers {
		assert.True(t, slices.IsSorted(names[layer]), "the layer %s is sorted by path", layer)
	}
	return img
}

// checkImage checks the image of name in dir: its digest is the one
// printed, it runs the binary built (as user, with the commit's labels and
// time), and its SBOM lists exactly the modules `go version -m` reads in
// that binary, the main module and the Go version, and for cni-gc the
// Debian packages of debian.lock, whose iptables it carries.
func checkImage(t *testing.T, dir, name, user, commit, commitTime, digests string) {
	img := readLayout(t, filepath.Join(dir, name))
	assert.Contains(t, digests, fmt.Sprintf("%s podsweeper-%s:dev %s\n", name, name, img.digest))
	c := img.config
	assert.Equal(t, "linux", c.OS)
	assert.Equal(t, "amd64", c.Architecture)
	assert.Equal(t, user, c.Config.User)
	assert.Equal(t, []string{"/" + name}, c.Config.Entrypoint)
	assert.Equal(t, commitTime, fmt.Sprint(c.Created.Unix()), "created at the commit's time")
	assert.Equal(t, commit, c.Config.Labels["org.opencontainers.image.revision"])
	assert.Equal(t, "https://github.com/podsweeper/podsweeper", c.Config.Labels["org.opencontainers.image.source"])
	bin, err := os.ReadFile(filepath.Join(dir, name+".bin"))
	require.NoError(t, err)
	assert.Equal(t, bin, img.files[name], "the image holds the binary built")
	index, err := os.ReadFile(filepath.Join(dir, name, "index.json"))
	require.NoError(t, err)
	assert.Equal(t, string(index), tarFile(t, filepath.Join(dir, name+".oci.tar"), "index.json"), "the OCI archive is the layout")
	var archive []struct {
		Config   string
		RepoTags []string
	}
	require.NoError(t, json.Unmarshal([]byte(tarFile(t, filepath.Join(dir, name+".tar"), "manifest.json")), &archive))
	require.Len(t, archive, 1)
	assert.Equal(t, []string{"podsweeper-" + name + ":dev"}, archive[0].RepoTags, "the docker archive names the image")
	assert.Equal(t, img.configDigest, archive[0].Config, "the docker archive holds the same config")
	assert.Contains(t, string(img.files["etc/passwd"]), "nonroot:x:65532:65532:")
	assert.Contains(t, string(img.files["etc/ssl/certs/ca-certificates.crt"]), "-----BEGIN CERTIFICATE-----")

	// What the go command recorded in the binary.
	extracted := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(extracted, img.files[name], 0o755))
	out, err := exec.Command("go", "version", "-m", extracted).Output()
	require.NoError(t, err)
	var goVersion, mainPath, mainVersion string
	var deps []string
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		f := strings.Fields(s.Text())
		switch {
		case len(f) == 2 && strings.HasSuffix(f[0], ":"):
			goVersion = f[1]
		case len(f) >= 3 && f[0] == "mod":
			mainPath, mainVersion = f[1], f[2]
		case len(f) >= 3 && f[0] == "dep":
			deps = append(deps, f[1]+"@"+f[2])
		case len(f) >= 2 && f[0] == "=>":
			t.Fatalf("%s was built with a replaced module (%s): the SBOM would not say which", name, s.Text())
		}
	}
	require.NotEmpty(t, deps)
	assert.Equal(t, mainVersion, c.Config.Labels["org.opencontainers.image.version"])
	assert.Contains(t, string(out), "vcs.revision="+commit)

	// What the SBOM says.
	var bom struct {
		Metadata struct {
			Timestamp time.Time `json:"timestamp"`
			Component struct {
				Name, Version string
				Properties    []struct{ Name, Value string }
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Name, Version, Purl string
		} `json:"components"`
	}
	b, err := os.ReadFile(filepath.Join(dir, name+".cdx.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &bom))
	assert.Equal(t, c.Created, bom.Metadata.Timestamp, "the SBOM is dated as the image")
	assert.Equal(t, mainPath, bom.Metadata.Component.Name)
	assert.Equal(t, mainVersion, bom.Metadata.Component.Version, "the main module's version")
	assert.Contains(t, bom.Metadata.Component.Properties, struct{ Name, Value string }{"cdx:gomod:build:env:GOVERSION", goVersion})
	var modules, debs []string
	std := ""
	for _, comp := range bom.Components {
		switch {
		case comp.Name == "std":
			std = comp.Version
		case strings.HasPrefix(comp.Purl, "pkg:golang/"):
			modules = append(modules, comp.Name+"@"+comp.Version)
		case strings.HasPrefix(comp.Purl, "pkg:deb/debian/"):
			debs = append(debs, comp.Name+"@"+comp.Version)
		default:
			t.Errorf("a component of neither Go nor Debian: %+v", comp)
		}
	}
	assert.Equal(t, goVersion, std, "the Go version")
	slices.Sort(deps)
	slices.Sort(modules)
	assert.Equal(t, deps, modules, "the SBOM lists exactly the modules the binary was built with")

	if name != "cni-gc" {
		assert.Empty(t, debs)
		return
	}
	lock, err := os.ReadFile("../tools/images/debian.lock")
	require.NoError(t, err)
	var pinned []string
	for line := range strings.Lines(string(lock)) {
		if f := strings.Fields(line); len(f) == 4 && !strings.HasPrefix(f[0], "#") {
			pinned = append(pinned, f[0]+"@"+f[1])
		}
	}
	slices.Sort(pinned)
	slices.Sort(debs)
	assert.Equal(t, pinned, debs, "the SBOM lists the Debian packages of debian.lock")
	assert.Equal(t, "iptables-nft", img.links["usr/sbin/iptables"], "iptables is the nft variant, as on Debian")
	assert.Contains(t, img.files, "usr/sbin/xtables-nft-multi")
	assert.Contains(t, img.files, "var/lib/dpkg/status.d/iptables", "scanners see the packages")
}
