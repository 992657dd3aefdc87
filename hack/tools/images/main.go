// Command images builds the OCI image of one of podsweeper's deployable
// programs from its static binary, with go-containerregistry, without
// Docker or a registry; `make images` runs it once per program.
//
//	images -binary bin/images/node-agent.bin -ref podsweeper-node-agent:dev \
//		-user 65532 -out bin/images [-debs bin/debs -sbom bin/images/cni-gc.cdx.json]
//
// It writes <out>/<name>/, an OCI image layout holding the image (tagged
// with -ref's tag), <out>/<name>.oci.tar, that layout as a tar, and
// <out>/<name>.tar, the same image as a docker-archive tarball (`docker
// load`, `ctr images import`), and prints the image's manifest digest. <name> is the binary's file name without ".bin".
//
// The image is reproducible: the same binary (and packages) gives the same
// digest. The binary must be static (CGO_ENABLED=0) and built with
// -trimpath, which it checks; its build information gives the image's
// revision and version labels and, unless SOURCE_DATE_EPOCH is set, its
// creation time (the commit's time, vcs.time). The layers are, in order:
//
//  1. base: /etc/passwd and /etc/group (root and nonroot, 65532), the CA
//     certificates of golang.org/x/crypto/x509roots/fallback, /tmp,
//     /home/nonroot, /run and the link /var/run to it; dated at the Unix epoch, so that it is the same layer
//     in every image and every build;
//  2. with -debs: the Debian packages of <debs>/*.tar (their data, as
//     `dpkg-deb --fsys-tarfile` writes it, with the packages' own times),
//     their control files under /var/lib/dpkg/status.d/ for scanners, and
//     the links Debian's alternatives would make for iptables (the nft
//     variant, Debian's default);
//  3. the binary, /<name>, dated at the creation time.
//
// With -sbom, that CycloneDX file (cyclonedx-gomod's) is dated at the
// creation time, and the Debian packages are added to its components
// (pkg:deb purls), beside the Go modules; a module the build's go.mod
// replaces by a directory, which cyclonedx-gomod names by the builder's
// path with no version, is left out.
package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// nonroot is the user of the images that need no root, as distroless
// names it.
const nonroot = 65532

// path is the images' PATH: the plugins cni-gc runs find iptables in it.
const envPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type options struct {
	binary, ref, out, debs, sbom, source string
	user                                 int
}

func main() {
	var o options
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	fs.StringVar(&o.binary, "binary", "", "the program's static binary, <name>.bin (required)")
	fs.StringVar(&o.ref, "ref", "", "the image's name and tag, e.g. podsweeper-node-agent:dev (required)")
	fs.IntVar(&o.user, "user", nonroot, "the user the program runs as: 65532 (nonroot) or 0 (root)")
	fs.StringVar(&o.out, "out", "", "where to write <name>/ (OCI layout) and <name>.tar (docker archive) (required)")
	fs.StringVar(&o.debs, "debs", "", "a directory of Debian packages' data (<pkg>.tar) and control files (<pkg>.control) to add")
	fs.StringVar(&o.sbom, "sbom", "", "the image's CycloneDX JSON file (cyclonedx-gomod's), to date and add the Debian packages to")
	fs.StringVar(&o.source, "source", "https://github.com/podsweeper/podsweeper", "the org.opencontainers.image.source label")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	digest, err := build(o, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

// build writes the image of o and returns its manifest digest.
func build(o options, sourceDateEpoch string) (string, error) {
	if o.binary == "" || o.ref == "" || o.out == "" {
		return "", errors.New("-binary, -ref and -out are required")
	}
	if o.user != 0 && o.user != nonroot {
		return "", fmt.Errorf("-user must be 0 or %d, got %d", nonroot, o.user)
	}
	tag, err := name.NewTag(o.ref)
	if err != nil {
		return "", fmt.Errorf("-ref: %w", err)
	}
	prog := strings.TrimSuffix(filepath.Base(o.binary), ".bin")
	info, err := checkBinary(o.binary)
	if err != nil {
		return "", err
	}
	created, err := creationTime(info, sourceDateEpoch)
	if err != nil {
		return "", err
	}
	bin, err := readFile(o.binary)
	if err != nil {
		return "", err
	}

	img, err := image(prog, o.user, created, labels(info, o.source, created))
	if err != nil {
		return "", err
	}
	base, err := baseLayer()
	if err != nil {
		return "", err
	}
	layers := []mutate.Addendum{base}
	var pkgs []debPackage
	if o.debs != "" {
		var l mutate.Addendum
		if l, pkgs, err = debLayer(o.debs); err != nil {
			return "", err
		}
		layers = append(layers, l)
	}
	t := tree{}
	t.file(prog, 0o755, bin, created)
	l, err := layerOf(t, "the program: /"+prog, created)
	if err != nil {
		return "", err
	}
	layers = append(layers, l)
	if img, err = mutate.Append(img, layers...); err != nil {
		return "", err
	}

	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	if err := writeLayout(filepath.Join(o.out, prog), img, tag); err != nil {
		return "", err
	}
	if err := writeLayoutTar(filepath.Join(o.out, prog+".oci.tar"), filepath.Join(o.out, prog), created); err != nil {
		return "", err
	}
	if err := writeTarball(filepath.Join(o.out, prog+".tar"), img, tag); err != nil {
		return "", err
	}
	if o.sbom != "" {
		if err := completeSBOM(o.sbom, created, pkgs); err != nil {
			return "", err
		}
	}
	return digest.String(), nil
}

// checkBinary refuses a binary that would not run alone in the image or
// would carry the paths of the machine that built it: it must have no
// program interpreter (static), and its build information must say
// CGO_ENABLED=0 and -trimpath.
func checkBinary(path string) (*buildinfo.BuildInfo, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0", path)
		}
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		return nil, fmt.Errorf("%s was built with CGO_ENABLED=%q: build it with CGO_ENABLED=0", path, settings["CGO_ENABLED"])
	}
	if settings["-trimpath"] != "true" {
		return nil, fmt.Errorf("%s was built without -trimpath: it would carry the build's paths", path)
	}
	return info, nil
}

// creationTime is SOURCE_DATE_EPOCH when set, the time of the commit the
// binary was built from otherwise.
func creationTime(info *buildinfo.BuildInfo, sourceDateEpoch string) (time.Time, error) {
	if sourceDateEpoch != "" {
		sec, err := strconv.ParseInt(sourceDateEpoch, 10, 64)
		if err != nil || sec < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH must be seconds since the epoch, got %q", sourceDateEpoch)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	v := setting(info, "vcs.time")
	if v == "" {
		return time.Time{}, errors.New("the binary has no vcs.time (built with -buildvcs=false?): set SOURCE_DATE_EPOCH")
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("the binary's vcs.time %q: %w", v, err)
	}
	return t.UTC(), nil
}

func setting(info *buildinfo.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// labels are the OCI annotations of the image's config, from the binary's
// build information: the commit, and the main module's version as the go
// command stamped it (the tag on a release's commit; a pseudo-version,
// "+dirty" for a tree with changes, otherwise).
func labels(info *buildinfo.BuildInfo, source string, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.version":  info.Main.Version,
		"org.opencontainers.image.created":  created.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.title":    "podsweeper " + strings.TrimPrefix(info.Path, info.Main.Path+"/examples/"),
	}
	if rev := setting(info, "vcs.revision"); rev != "" {
		l["org.opencontainers.image.revision"] = rev
	}
	return l
}

// image is the empty image of prog, OCI media types, linux/amd64.
func image(prog string, user int, created time.Time, labels map[string]string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + prog},
		User:       fmt.Sprintf("%d:%d", user, user),
		Env:        []string{envPath},
		WorkingDir: "/",
		Labels:     labels,
	}
	return mutate.ConfigFile(img, cf)
}

// epoch dates what does not come from the commit: the base layer.
var epoch = time.Unix(0, 0).UTC()

// baseLayer holds the users, the CA certificates and the usual directories.
func baseLayer() (mutate.Addendum, error) {
	t := tree{}
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs", "home", "run", "var"} {
		t.dir(d, 0o755, 0, epoch)
	}
	// As on the host (the FHS): paths under /var/run, which runtimes cache
	// (containerd's network namespaces, /var/run/netns/cni-...), name what
	// a pod mounts under /run.
	t.symlink("var/run", "/run", epoch)
	t.dir("tmp", 0o1777, 0, epoch)
	t.dir("home/nonroot", 0o700, nonroot, epoch)
	t.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\n"+
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), epoch)
	t.file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n"), epoch)
	certs, err := caCertificates()
	if err != nil {
		return mutate.Addendum{}, err
	}
	t.file("etc/ssl/certs/ca-certificates.crt", 0o644, certs, epoch)
	return layerOf(t, "base: /etc/passwd, /etc/group, CA certificates, /tmp, /run, /var/run", epoch)
}

// caCertificates is the PEM bundle of the NSS roots that carry no
// constraint beyond X.509's (a root distrusted after a date cannot be
// written in a PEM file, so it is left out).
func caCertificates() ([]byte, error) {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	if b.Len() == 0 {
		return nil, errors.New("no CA certificate in the bundle")
	}
	return b.Bytes(), nil
}

// debianRelease is the release the packages of debian.lock come from.
const debianRelease = "debian-12"

// debPackage is what the SBOM says of a Debian package.
type debPackage struct {
	name, version, arch string
}

// debLayer is the layer of the packages in dir.
func debLayer(dir string) (mutate.Addendum, []debPackage, error) {
	tars, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return mutate.Addendum{}, nil, err
	}
	if len(tars) == 0 {
		return mutate.Addendum{}, nil, fmt.Errorf("-debs %s: no <package>.tar in it", dir)
	}
	sort.Strings(tars)
	t := tree{}
	var pkgs []debPackage
	for _, p := range tars {
		f, err := os.Open(p)
		if err != nil {
			return mutate.Addendum{}, nil, err
		}
		err = t.merge(f, p)
		f.Close()
		if err != nil {
			return mutate.Addendum{}, nil, err
		}
		pkg := strings.TrimSuffix(filepath.Base(p), ".tar")
		control, err := readFile(filepath.Join(dir, pkg+".control"))
		if err != nil {
			return mutate.Addendum{}, nil, err
		}
		dp, err := parseControl(control)
		if err != nil {
			return mutate.Addendum{}, nil, fmt.Errorf("%s.control: %w", pkg, err)
		}
		if dp.name != pkg {
			return mutate.Addendum{}, nil, fmt.Errorf("%s.control is the control file of %q", pkg, dp.name)
		}
		pkgs = append(pkgs, dp)
		t.file("var/lib/dpkg/status.d/"+pkg, 0o644, control, epoch)
	}
	if _, ok := t["usr/sbin/xtables-nft-multi"]; ok {
		// update-alternatives' choice on Debian: iptables is iptables-nft.
		for _, cmd := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
			nft := strings.Replace(cmd, "tables", "tables-nft", 1)
			if _, ok := t["usr/sbin/"+nft]; !ok {
				return mutate.Addendum{}, nil, fmt.Errorf("the iptables package has no /usr/sbin/%s", nft)
			}
			t.symlink("usr/sbin/"+cmd, nft, epoch)
		}
	}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.name+"="+p.version)
	}
	l, err := layerOf(t, "Debian packages: "+strings.Join(names, " "), epoch)
	return l, pkgs, err
}

// parseControl reads a Debian control file's Package, Version and
// Architecture.
func parseControl(b []byte) (debPackage, error) {
	var p debPackage
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch k {
		case "Package":
			p.name = v
		case "Version":
			p.version = v
		case "Architecture":
			p.arch = v
		}
	}
	if p.name == "" || p.version == "" || p.arch == "" {
		return p, errors.New("no Package, Version or Architecture")
	}
	return p, nil
}

// layerOf is the gzip'd OCI layer of t, with its history entry.
func layerOf(t tree, what string, created time.Time) (mutate.Addendum, error) {
	b, err := t.bytes()
	if err != nil {
		return mutate.Addendum{}, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return mutate.Addendum{}, err
	}
	return mutate.Addendum{Layer: l, History: v1.History{
		Created:   v1.Time{Time: created},
		CreatedBy: "make images",
		Comment:   what,
	}}, nil
}

// writeLayout writes img to a new OCI layout at dir, named by tag's tag.
func writeLayout(dir string, img v1.Image, tag name.Tag) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		// containerd's importer names the image by this one.
		"io.containerd.image.name": containerdName(tag),
	}))
}

// containerdName is tag as containerd and the kubelet name it:
// docker.io/library/podsweeper-node-agent:dev for podsweeper-node-agent:dev.
func containerdName(tag name.Tag) string {
	reg := tag.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// writeLayoutTar writes the OCI layout at dir as a tar (what `ctr images
// import` takes as an OCI archive: it keeps the manifest's digest, which a
// docker archive's import does not, and names the image by the layout's
// io.containerd.image.name), its entries sorted and dated at created.
func writeLayoutTar(path, dir string, created time.Time) error {
	t := tree{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			t.dir(filepath.ToSlash(rel), 0o755, 0, created)
			return nil
		}
		b, err := readFile(p)
		if err != nil {
			return err
		}
		t.file(filepath.ToSlash(rel), 0o644, b, created)
		return nil
	})
	if err != nil {
		return err
	}
	b, err := t.bytes()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// writeTarball writes img as a docker archive (manifest.json, the config
// and the layers), tagged tag, through a temporary file.
func writeTarball(path string, img v1.Image, tag name.Tag) error {
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// withoutReplacedDirectories returns components without the Go modules
// that a go.mod replaces by a directory: cyclonedx-gomod names such a
// module by the directory, the builder's own path, with no version to
// name. It leaves them out of bom's dependencies too.
func withoutReplacedDirectories(bom map[string]any, components []any) []any {
	gone := map[string]bool{}
	kept := components[:0:0]
	for _, c := range components {
		m, _ := c.(map[string]any)
		if m != nil && isDirectoryModule(m) {
			if ref, ok := m["bom-ref"].(string); ok {
				gone[ref] = true
			}
			continue
		}
		kept = append(kept, c)
	}
	if len(gone) == 0 {
		return components
	}
	deps, _ := bom["dependencies"].([]any)
	keptDeps := deps[:0:0]
	for _, d := range deps {
		m, _ := d.(map[string]any)
		if m == nil {
			keptDeps = append(keptDeps, d)
			continue
		}
		if ref, _ := m["ref"].(string); gone[ref] {
			continue
		}
		if on, ok := m["dependsOn"].([]any); ok {
			keptOn := on[:0:0]
			for _, r := range on {
				if s, _ := r.(string); !gone[s] {
					keptOn = append(keptOn, r)
				}
			}
			m["dependsOn"] = keptOn
		}
		keptDeps = append(keptDeps, d)
	}
	if deps != nil {
		bom["dependencies"] = keptDeps
	}
	return kept
}

// isDirectoryModule reports whether the component c is a Go module named
// by a directory (a replacement's: "/...", "./..." or "../...").
func isDirectoryModule(c map[string]any) bool {
	purl, _ := c["purl"].(string)
	name, _ := c["name"].(string)
	if purl != "" && !strings.HasPrefix(purl, "pkg:golang/") {
		return false
	}
	path := strings.TrimPrefix(purl, "pkg:golang/")
	for _, p := range []string{name, path} {
		if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || p == "." || p == ".." {
			return true
		}
	}
	return false
}

// completeSBOM dates the CycloneDX file at path at the image's creation
// (cyclonedx-gomod writes the time it ran, which would make the file of
// every build differ), leaves out the modules replaced by a directory
// (withoutReplacedDirectories) and adds pkgs to its components.
func completeSBOM(path string, created time.Time, pkgs []debPackage) error {
	b, err := readFile(path)
	if err != nil {
		return err
	}
	var bom map[string]any
	if err := json.Unmarshal(b, &bom); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	metadata, ok := bom["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: no metadata: not a CycloneDX file", path)
	}
	metadata["timestamp"] = created.Format(time.RFC3339)
	components, _ := bom["components"].([]any)
	components = withoutReplacedDirectories(bom, components)
	for _, p := range pkgs {
		// A purl escapes the "+" of Debian's security versions.
		purl := fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s&distro=%s", p.name, strings.ReplaceAll(p.version, "+", "%2B"), p.arch, debianRelease)
		components = append(components, map[string]any{
			"bom-ref": purl, "type": "library", "name": p.name, "version": p.version, "purl": purl,
		})
	}
	bom["components"] = components
	out, err := json.MarshalIndent(bom, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}
