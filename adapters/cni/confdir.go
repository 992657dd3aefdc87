package cni

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/containernetworking/cni/libcni"

	"github.com/podsweeper/podsweeper/internal/pathkind"
)

// confExtensions are the file names libcni's runtimes read as network
// configs (containerd and CRI-O: .conf, .conflist and .json).
var confExtensions = []string{".conf", ".conflist", ".json"}

// confNet is what the configs of ConfDir tell of one network, read once
// (readConfDir) for both the cache's attachments and host-local's
// reservations, so that the two never disagree on it.
type confNet struct {
	// List is the network's config as the runtime loads it, which a DEL of
	// one of its reservations runs: the first file in name order that names
	// it and parses (a .conflist, or a single plugin's .conf as a list of
	// one); nil when none parses.
	List *libcni.NetworkConfigList
	// DataDirs are the data directories of the host-local plugins List
	// runs, itself or as another plugin's "ipam"; none when it runs no
	// host-local.
	DataDirs []string
	// HostLocals is how many times a DEL of List has host-local release
	// the container: once per host-local plugin, per range set of its
	// (dual stack: two). From the second on, host-local finds nothing of
	// the container left and, as it does then, removes the files that
	// hold the container's ID alone (readReservation).
	HostLocals int
	// Never: a config that names the network, any of them, says
	// "disableGC": true: it is never touched, whichever file the runtime
	// loads.
	Never bool
}

// readConfDir reads the network configs of dir (the runtime's ConfDir)
// into one view by network name: the config the runtime loads, the
// host-local data directories it sets (defaultDataDir when one sets none),
// and whether any config naming it says disableGC. A directory that does
// not exist holds none; a file that does not load as a network, or is no
// regular file (a named pipe, a directory, a link to neither), is not a
// network the runtime uses, and is passed over but for its "disableGC" (a
// single plugin's .conf, which the runtime loads as a list of one: its own
// key says). A file being written (one that is not whole JSON yet, or a
// whole one that does not load while its network's own directory of
// plugin configs is there) is not read yet: writing names it by the
// network it names, whose config, data directories and disableGC cannot
// be told until it is whole (Collector's confRead.unread). A directory that
// cannot be read, or a file of it that cannot be read to its end (its
// permissions, a read that fails, or a link to what the collector cannot
// see, as into a directory its pod does not mount, though the runtime
// may), and so a network's own directory of plugin configs (<dir>/<name>/,
// which libcni reads) or a config in it, is an error: the collector cannot
// know which networks to leave alone; and so is a file being written whose
// network cannot be told yet. A network whose own directory holds what
// would block libcni's read (a named pipe) is kept (Never), its config
// read without that directory.
func readConfDir(dir, defaultDataDir string) (nets map[string]confNet, writing map[string]string, err error) {
	// As New classifies it (pathkind): it may have changed since.
	switch kind, _, err := pathkind.Of(dir); kind {
	case pathkind.Missing:
		return map[string]confNet{}, nil, nil
	case pathkind.Dangling: // a link into what the collector does not see: the runtime may
		return nil, nil, fmt.Errorf("cni: the network configs' directory %s is a link the collector cannot follow (%w): which networks they keep cannot be told", dir, err)
	}
	files, err := libcni.ConfFiles(dir, confExtensions)
	if err != nil {
		return nil, nil, fmt.Errorf("cni: reading the network configs in %s: %w", dir, err)
	}
	slices.Sort(files)
	nets = map[string]confNet{}
	for _, f := range files {
		f = filepath.Clean(f)
		fi, err := os.Stat(f)
		switch {
		case err == nil && fi.IsDir():
			continue // no config the runtime loads
		case err == nil && !fi.Mode().IsRegular():
			// A FIFO would block its read (the runtime's too), and a device may hold anything: what it says cannot
			// be read, as a file that cannot be.
			err = fmt.Errorf("not a regular file (%s): never read", fi.Mode().Type())
		}
		if err == nil {
			err = readsWhole(f)
		}
		if err != nil { // it may name a network with "disableGC": none is touched until it can be read
			return nil, nil, fmt.Errorf("cni: the network config %s cannot be read (%w): which networks it names, and whether it says disableGC, cannot be told", f, err)
		}
		name, named := confNameOf(f)
		irregular, err := holdsIrregular(filepath.Join(dir, name))
		if named && err != nil {
			return nil, nil, err
		}
		load := loadNetwork
		if named && irregular {
			// libcni reads the network's own directory of plugin configs: one that holds a FIFO would block
			// the read. The network is never touched, and is still the config's: its inline plugins tell its
			// host-local data directories, so that its reservations are kept, not reported gone.
			load = loadNetworkInline
			n := nets[name]
			n.Never = true
			nets[name] = n
		}
		list, never, err := load(f)
		if err != nil {
			// Not a network the runtime loads, or one being written: what it tells is not all there.
			name, says, being, err := saysDisableGC(f, dir)
			if err != nil {
				return nil, nil, err
			}
			if being {
				if writing == nil {
					writing = map[string]string{}
				}
				if _, ok := writing[name]; !ok {
					writing[name] = f
				}
			}
			if says {
				n := nets[name]
				n.Never = true
				nets[name] = n
			}
			continue
		}
		n := nets[list.Name]
		n.Never = n.Never || never || list.DisableGC
		if n.List == nil {
			n.List = list
			for _, p := range list.Plugins {
				d, ok := hostLocalDataDir(p.Bytes, defaultDataDir)
				if ok {
					n.HostLocals += hostLocalReleases(p.Bytes)
				}
				if ok && !slices.Contains(n.DataDirs, d) {
					n.DataDirs = append(n.DataDirs, d)
				}
			}
		}
		nets[list.Name] = n
	}
	return nets, writing, nil
}

// disableGCNetworks returns the names of the networks that a config in dir
// names with "disableGC": true, and those whose config is being written
// (readConfDir).
func disableGCNetworks(dir string) (keep map[string]bool, writing map[string]string, err error) {
	nets, writing, err := readConfDir(dir, DefaultHostLocalDataDir)
	if err != nil {
		return nil, nil, err
	}
	keep = map[string]bool{}
	for name, n := range nets {
		if n.Never {
			keep[name] = true
		}
	}
	return keep, writing, nil
}

// confNameOf returns the "name" of the config file f, whatever it is (libcni reads <dir>/<name> for any, "" and
// names with a slash too); named: f parses and has a "name" key.
func confNameOf(f string) (name string, named bool) {
	b, err := readFile(f)
	if err != nil {
		return "", false
	}
	var raw map[string]json.RawMessage // the exact key, as libcni reads it: "NAME" is another
	if json.Unmarshal(b, &raw) != nil || raw["name"] == nil {
		return "", false
	}
	if json.Unmarshal(raw["name"], &name) != nil {
		return "", false
	}
	return name, true
}

// pluginDir reports whether p may be a network's own directory of plugin configs: a directory, or a link the collector
// cannot follow (into a directory its pod does not mount, which the runtime's may). Anything else there (a file, a
// FIFO) is no directory: libcni fails to load the network ("not a directory"), and nothing is being written.
func pluginDir(p string) bool {
	li, err := os.Lstat(p)
	if err != nil {
		return false
	}
	st, err := os.Stat(p)
	if err != nil {
		return li.Mode()&fs.ModeSymlink != 0
	}
	return st.IsDir()
}

// saysDisableGC reports the network of a config file f of dir that libcni does not load, whether it says
// "disableGC": true, and whether it is being written. A whole JSON file says it by its own key
// (singleSaysDisableGC); it is being written only when it names a network whose own directory of plugin configs
// (<dir>/<name>/, which libcni reads with it) is there (pluginDir), for a plugin config there may be what is being
// written.
// A file that is not whole JSON is being written, and names the network of its top-level "name" (topLevelName);
// one whose top-level name cannot be told for sure (empty, or cut before it) is an error: which network it is the
// config of cannot be told, and every one is kept.
func saysDisableGC(f, dir string) (name string, says, writing bool, err error) {
	b, rerr := readFile(f)
	if rerr != nil {
		return "", false, false, nil
	}
	if json.Valid(b) {
		n, ok := singleDisableGC(f)
		if n == "" {
			return "", false, false, nil
		}
		return n, ok, pluginDir(filepath.Join(dir, n)), nil
	}
	name, ok := topLevelName(b)
	if !ok {
		return "", false, false, fmt.Errorf("cni: the network config %s does not parse (being written?) and its network's name cannot be told from it yet: which networks it keeps cannot be told", f)
	}
	return name, false, true, nil
}

// topLevelName returns the "name" of the object b starts, as far as it can be read (it may be cut short): the
// string value of its own "name" key, not one of an object or list in it (a plugin's). ok is false when no such
// key is read in full, or when it is given twice with two values, or when the object is cut where another key
// follows (after a comma, or inside a key that may be "name"): given a second time, the last read wins. A cut right
// after the name's value takes it: a config that gives "name" again after it (libcni takes the last) is beyond what
// can be told while it is cut, and docs/sdk/cni-freeing.md says so.
func topLevelName(b []byte) (name string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	depth, wantKey, key := 1, true, ""
	for depth > 0 {
		off := dec.InputOffset()
		t, err := dec.Token()
		if err != nil { // cut short, or no JSON past here
			if depth == 1 && !wantKey && key == "name" { // cut inside a "name" given again: it wins, whatever it is
				return "", false
			}
			// Cut where a key that may be "name" given again follows: after a comma, or inside a key (its first
			// letters, or any written with an escape).
			next := strings.TrimLeft(string(b[off:]), " \t\r\n")
			if rest := strings.TrimLeft(next, " \t\r\n,"); depth == 1 && wantKey && (next != "" || rest != "") &&
				(strings.HasPrefix(`"name"`, rest) || strings.HasPrefix(rest, `"`) && strings.Contains(rest, `\`)) {
				return "", false
			}
			break
		}
		if depth == 1 && wantKey {
			if t == json.Delim('}') {
				break
			}
			key, wantKey = fmt.Sprint(t), false
			continue
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
			continue
		case json.Delim('}'), json.Delim(']'):
			depth--
			wantKey = depth == 1
			continue
		}
		if depth > 1 {
			continue
		}
		wantKey = true
		if key != "name" {
			continue
		}
		s, isString := t.(string)
		if !isString || ok && s != name {
			return "", false
		}
		name, ok = s, true
	}
	return name, ok
}

// holdsIrregular reports whether the directory d (a network's own directory of plugin configs, which libcni reads)
// holds an entry that is not a regular file or a directory (a FIFO, a device, a socket, a link to one): one whose
// read may block. A plugin config there that cannot be read (its mode, a link to what the collector does not see)
// is an error: it may say disableGC.
func holdsIrregular(d string) (bool, error) {
	if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
		return false, nil // no such directory: the network has no plugin configs but its own
	}
	entries, err := os.ReadDir(d)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return false, nil // a file: libcni fails to load the network, as loadNetwork does
	case err != nil:
		// A link the collector cannot follow (into a directory its pod does not mount, though the runtime's
		// may), a loop, its permissions: the plugin configs the runtime loads there may say disableGC.
		return false, fmt.Errorf("cni: the network's directory of plugin configs %s cannot be read (%w): whether they say disableGC cannot be told", d, err)
	}
	irregular := false
	for _, e := range entries {
		p := filepath.Join(d, e.Name())
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() {
			err = readsWhole(p)
		}
		switch {
		case err != nil && slices.Contains(confExtensions, filepath.Ext(p)):
			return false, fmt.Errorf("cni: the plugin config %s cannot be read (%w): whether it says disableGC cannot be told", p, err)
		case err == nil && !fi.Mode().IsRegular() && !fi.IsDir():
			irregular = true
		}
	}
	return irregular, nil
}

// readsWhole reads the regular file f to its end: one that opens and whose read fails (EIO: a failing disk, a FUSE
// mount) cannot be read either.
func readsWhole(f string) error {
	_, err := readFile(f)
	return err
}

// singleDisableGC returns the network of a single plugin's config file f, and whether it says "disableGC": true
// (singleSaysDisableGC).
func singleDisableGC(f string) (string, bool) {
	b, err := readFile(f)
	if err != nil {
		return "", false
	}
	var raw map[string]json.RawMessage // the exact key, as libcni reads it: "NAME" is another
	var name string
	if json.Unmarshal(b, &raw) != nil || raw["name"] == nil || json.Unmarshal(raw["name"], &name) != nil || name == "" {
		return "", false
	}
	return name, singleSaysDisableGC(b)
}

// singleSaysDisableGC reports whether a single plugin's config says "disableGC": true, as libcni reads a list's
// key (a bool, or "true" in any case: "tRuE"), or as strconv.ParseBool reads a string true ("1", "t"): a doubtful
// value keeps the network. The key is read by its exact name, whatever other cases of it say.
func singleSaysDisableGC(conf []byte) bool {
	var raw map[string]json.RawMessage
	if json.Unmarshal(conf, &raw) != nil {
		return false
	}
	v, ok := raw["disableGC"]
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		b, err := strconv.ParseBool(s)
		return strings.EqualFold(s, "true") || err == nil && b
	}
	return false
}
