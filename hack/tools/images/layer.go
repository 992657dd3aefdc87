package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// entry is one file, directory or link of a layer.
type entry struct {
	hdr  tar.Header
	data []byte
}

// tree is the content of a layer, by path (no leading "/"). Its tar is
// written in the order of the paths, every parent directory first, with
// the times and owners the entries were given: the same tree always gives
// the same bytes.
type tree map[string]*entry

// dir adds a directory.
func (t tree) dir(name string, mode int64, uid int, mtime time.Time) {
	t[name] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime}}
}

// file adds a regular file.
func (t tree) file(name string, mode int64, data []byte, mtime time.Time) {
	t[name] = &entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime}, data: data}
}

// symlink adds a symbolic link to target.
func (t tree) symlink(name, target string, mtime time.Time) {
	t[name] = &entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: mtime}}
}

// merge adds the entries of the tar r (a Debian package's data, as
// `dpkg-deb --fsys-tarfile` writes it), keeping their modes, owners and
// times. A directory that is there already is kept; a file or link that is
// there already must be the same, or merge fails: two packages that ship
// one path differently cannot both be installed.
func (t tree) merge(r io.Reader, source string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		name := cleanName(hdr.Name)
		if name == "" {
			continue // the archive's root, "./"
		}
		var data []byte
		switch hdr.Typeflag {
		case tar.TypeDir:
			if _, ok := t[name]; ok {
				continue
			}
		case tar.TypeReg:
			if data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("%s: %s: %w", source, name, err)
			}
		case tar.TypeSymlink:
		case tar.TypeLink:
			hdr.Linkname = cleanName(hdr.Linkname)
		default:
			return fmt.Errorf("%s: %s: unexpected entry type %q", source, name, hdr.Typeflag)
		}
		e := &entry{hdr: tar.Header{
			Typeflag: hdr.Typeflag, Name: name, Linkname: hdr.Linkname, Mode: hdr.Mode,
			Uid: hdr.Uid, Gid: hdr.Gid, Size: int64(len(data)), ModTime: hdr.ModTime.UTC().Truncate(time.Second),
		}, data: data}
		if hdr.Typeflag == tar.TypeDir {
			e.hdr.Name += "/"
		}
		if old, ok := t[name]; ok {
			if old.hdr.Typeflag != e.hdr.Typeflag || old.hdr.Linkname != e.hdr.Linkname || !bytes.Equal(old.data, e.data) {
				return fmt.Errorf("%s: %s is shipped twice, differently", source, name)
			}
			continue
		}
		t[name] = e
	}
}

// cleanName makes a tar entry's name relative to the root, without "./".
func cleanName(name string) string {
	name = path.Clean("/" + name)
	return strings.TrimPrefix(name, "/")
}

// write writes the tree as a tar, sorted by path. A parent directory that
// no entry names is added, root-owned 0755, with the time of the child
// that needed it.
func (t tree) write(w io.Writer) error {
	for name, e := range t {
		for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := t[d]; !ok {
				t.dir(d, 0o755, 0, e.hdr.ModTime)
			}
		}
	}
	names := make([]string, 0, len(t))
	for name := range t {
		names = append(names, name)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, name := range names {
		e := t[name]
		hdr := e.hdr
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(&hdr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return tw.Close()
}

// bytes returns the tree's tar.
func (t tree) bytes() ([]byte, error) {
	var b bytes.Buffer
	if err := t.write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readFile reads a file for a layer.
func readFile(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading %w", err)
	}
	return b, nil
}
