package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// entries reads the names of a tar, in order.
func entries(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
}

// TestTreeIsWrittenTheSameWhateverTheOrder: a layer's bytes depend on its
// content only: the same files added in another order give the same tar,
// sorted by path, every parent directory before its children.
func TestTreeIsWrittenTheSameWhateverTheOrder(t *testing.T) {
	when := time.Unix(1700000000, 0)
	a, b := tree{}, tree{}
	a.file("usr/sbin/b", 0o755, []byte("b"), when)
	a.file("etc/passwd", 0o644, []byte("p"), when)
	a.symlink("usr/sbin/a", "b", when)
	b.symlink("usr/sbin/a", "b", when)
	b.file("etc/passwd", 0o644, []byte("p"), when)
	b.file("usr/sbin/b", 0o755, []byte("b"), when)
	ab, err := a.bytes()
	if err != nil {
		t.Fatal(err)
	}
	bb, err := b.bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ab, bb) {
		t.Fatal("the same tree written twice differs")
	}
	want := []string{"etc/", "etc/passwd", "usr/", "usr/sbin/", "usr/sbin/a", "usr/sbin/b"}
	if got := entries(t, ab); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("entries %q, want %q", got, want)
	}
}

// debTar is a Debian package's data as dpkg-deb --fsys-tarfile writes it.
func debTar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: "./" + name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(1600000000, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestMergeRefusesAPathShippedTwiceDifferently: two packages may ship the
// same directory, or the same file identically, but not one path with two
// contents.
func TestMergeRefusesAPathShippedTwiceDifferently(t *testing.T) {
	tr := tree{}
	if err := tr.merge(bytes.NewReader(debTar(t, map[string]string{"usr/share/doc/x/copyright": "x"})), "x.tar"); err != nil {
		t.Fatal(err)
	}
	if err := tr.merge(bytes.NewReader(debTar(t, map[string]string{"usr/share/doc/x/copyright": "x"})), "same.tar"); err != nil {
		t.Fatalf("the same file twice: %v", err)
	}
	err := tr.merge(bytes.NewReader(debTar(t, map[string]string{"usr/share/doc/x/copyright": "y"})), "other.tar")
	if err == nil || !strings.Contains(err.Error(), "shipped twice, differently") {
		t.Fatalf("a file shipped twice differently: %v", err)
	}
	if tr["usr/share/doc/x/copyright"].hdr.ModTime != time.Unix(1600000000, 0).UTC() {
		t.Fatal("a package's file keeps its own time")
	}
}

// buildProgram builds a small program into dir with env, for checkBinary.
func buildProgram(t *testing.T, dir string, env []string, flags ...string) string {
	t.Helper()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "prog.bin")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, src)...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, b)
	}
	return out
}

// TestCheckBinaryRefusesWhatWouldNotShip: a binary built without
// -trimpath carries the build's paths and is refused; a static one built
// with it is taken.
func TestCheckBinaryRefusesWhatWouldNotShip(t *testing.T) {
	static := []string{"CGO_ENABLED=0", "GOFLAGS=-buildvcs=false"}
	if _, err := checkBinary(buildProgram(t, t.TempDir(), static)); err == nil || !strings.Contains(err.Error(), "-trimpath") {
		t.Fatalf("without -trimpath: %v", err)
	}
	info, err := checkBinary(buildProgram(t, t.TempDir(), static, "-trimpath"))
	if err != nil {
		t.Fatalf("static, -trimpath: %v", err)
	}
	if _, err := creationTime(info, ""); err == nil {
		t.Fatal("no vcs.time and no SOURCE_DATE_EPOCH: the creation time is unknown, not made up")
	}
	if got, err := creationTime(info, "1700000000"); err != nil || !got.Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("SOURCE_DATE_EPOCH: %v, %v", got, err)
	}
	if _, err := creationTime(info, "yesterday"); err == nil {
		t.Fatal("a SOURCE_DATE_EPOCH that is no number is refused")
	}
}

// docs/sdk/first-agent.md: the SBOM lists "your module and every module it
// is built from, but a module your go.mod replaces by a directory":
// cyclonedx-gomod names such a module by the builder's own directory, with
// no version; it is left out, of the components and of the dependencies,
// and the modules it requires stay.
func TestSBOMLeavesOutAModuleReplacedByADirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.cdx.json")
	bom := `{"bomFormat":"CycloneDX","metadata":{"timestamp":"2026-12-05T12:00:00Z","component":{"bom-ref":"pkg:golang/example.com/first-agent@v0.0.0","name":"example.com/first-agent"}},
"components":[
 {"bom-ref":"pkg:golang//home/dev/podsweeper","type":"library","name":"/home/dev/podsweeper","purl":"pkg:golang//home/dev/podsweeper"},
 {"bom-ref":"pkg:golang/../podsweeper","type":"library","name":"../podsweeper","purl":"pkg:golang/../podsweeper"},
 {"bom-ref":"pkg:golang/sigs.k8s.io/controller-runtime@v0.22.0?type=module","type":"library","name":"sigs.k8s.io/controller-runtime","version":"v0.22.0","purl":"pkg:golang/sigs.k8s.io/controller-runtime@v0.22.0?type=module"}],
"dependencies":[
 {"ref":"pkg:golang/example.com/first-agent@v0.0.0","dependsOn":["pkg:golang//home/dev/podsweeper","pkg:golang/sigs.k8s.io/controller-runtime@v0.22.0?type=module"]},
 {"ref":"pkg:golang//home/dev/podsweeper","dependsOn":["pkg:golang/sigs.k8s.io/controller-runtime@v0.22.0?type=module"]},
 {"ref":"pkg:golang/sigs.k8s.io/controller-runtime@v0.22.0?type=module"}]}`
	if err := os.WriteFile(path, []byte(bom), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := completeSBOM(path, time.Unix(0, 0).UTC(), nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "/home/dev") || strings.Contains(s, "../podsweeper") {
		t.Errorf("the SBOM still names a directory a module was replaced by:\n%s", s)
	}
	if s := string(b); !strings.Contains(s, `"name": "sigs.k8s.io/controller-runtime"`) ||
		!strings.Contains(s, `"ref": "pkg:golang/example.com/first-agent@v0.0.0"`) {
		t.Errorf("the SBOM lost a module it is built from:\n%s", s)
	}
}
