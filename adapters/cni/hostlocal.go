package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/utils"

	"github.com/podsweeper/podsweeper/internal/pathkind"
)

// DefaultHostLocalDataDir is where host-local keeps its reservations when
// a network's config sets no "dataDir" (Options.HostLocalDataDir).
const DefaultHostLocalDataDir = "/var/lib/cni/networks"

// hostLocalType is the plugin type of the IPAM whose reservations the
// Collector reads.
const hostLocalType = "host-local"

// The files host-local keeps in a network's directory beside the
// reservations (backend/disk in containernetworking/plugins): its lock,
// and the last address reserved in each range.
const (
	hostLocalLock       = "lock"
	hostLocalLastPrefix = "last_reserved_ip."
)

// Reservation is one address that host-local reserved: the file
// <DataDir>/<Network>/<IP>, which holds the container ID the runtime
// added it for (CNI_CONTAINERID, the sandbox's ID for containerd and
// CRI-O) and the interface name (CNI_IFNAME).
type Reservation struct {
	// Network is the network's name, the directory's.
	Network string
	// DataDir is host-local's data directory ("dataDir" in the network's
	// IPAM config; DefaultHostLocalDataDir when it sets none), its links
	// followed (filepath.EvalSymlinks): the directory the file is in, one
	// path for configs that name it by different ones.
	DataDir string
	// IP is the address, the file's name.
	IP string
	// ContainerID and IfName are the file's two lines.
	ContainerID, IfName string
	// Reserved is the file's modification time: host-local writes it once,
	// when it reserves the address during ADD.
	Reserved time.Time
}

// Path returns the reservation's file.
func (r Reservation) Path() string { return filepath.Join(r.DataDir, r.Network, r.IP) }

// hostLocalNet is a network of ConfDir whose plugins run host-local
// (readConfDir): its current config, which a DEL of one of its
// reservations runs, the data directories its host-local plugins keep
// their reservations in, and whether any config naming it says
// "disableGC": true (Never).
type hostLocalNet = confNet

// hostLocalNetworks returns, by name, the networks of confDir
// (readConfDir) whose plugins run host-local, itself or as another
// plugin's "ipam", with the data directory each sets (defaultDataDir when
// none): the config the runtime loads (the first file in name order for a
// network named twice), and Never when any config naming the network says
// disableGC; and the networks whose config is being written (readConfDir),
// each with its file. A directory that does not exist holds none.
func hostLocalNetworks(confDir, defaultDataDir string) (nets map[string]hostLocalNet, writing map[string]string, err error) {
	all, writing, err := readConfDir(confDir, defaultDataDir)
	if err != nil {
		return nil, nil, err
	}
	nets = map[string]hostLocalNet{}
	for name, n := range all {
		if len(n.DataDirs) > 0 {
			for i, d := range n.DataDirs {
				n.DataDirs[i] = canonicalDir(d)
			}
			nets[name] = n
		}
	}
	return nets, writing, nil
}

// canonicalDir is dir with its links resolved, so that two spellings of one data directory (/var/run and /run)
// are one; dir as it is when it cannot be resolved (it does not exist), or when the system would follow it through
// /proc (throughProc: readReservations then reads none of it).
func canonicalDir(dir string) string {
	if throughProc(dir) {
		return dir
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		return d
	}
	return dir
}

// loadNetwork loads the config file f as the runtime does: a list, or a
// single plugin's config made a list of one (as libcni's deprecated
// ConfListFromConf does). never: a single plugin's config says
// "disableGC": true itself.
func loadNetwork(f string) (list *libcni.NetworkConfigList, never bool, err error) {
	return loadNetworkWith(f, libcni.NetworkConfFromFile)
}

// loadNetworkInline is loadNetwork with the network's directory of plugin
// configs (<ConfDir>/<name>/, which libcni appends to f's own plugins)
// read without blocking: what is no regular file there (a named pipe, which
// would block libcni's read) is passed over, and so is a plugin config that
// does not load. The network is never touched then (readConfDir), but its
// plugins still tell its host-local data directories.
func loadNetworkInline(f string) (list *libcni.NetworkConfigList, never bool, err error) {
	return loadNetworkWith(f, func(f string) (*libcni.NetworkConfigList, error) {
		b, err := readFile(f)
		if err != nil {
			return nil, err
		}
		list, err := libcni.NetworkConfFromBytes(b)
		if err != nil {
			return nil, err
		}
		if !list.LoadOnlyInlinedPlugins {
			files, _ := libcni.ConfFiles(filepath.Join(filepath.Dir(f), list.Name), []string{".conf"})
			for _, pf := range files {
				pb, err := readFile(pf)
				if err != nil {
					continue
				}
				if pc, err := libcni.NetworkPluginConfFromBytes(pb); err == nil {
					list.Plugins = append(list.Plugins, pc)
				}
			}
		}
		if len(list.Plugins) == 0 {
			return nil, errors.New("no plugin configs found")
		}
		return list, nil
	})
}

// loadNetworkWith is loadNetwork, with load reading a list.
func loadNetworkWith(f string, load func(string) (*libcni.NetworkConfigList, error)) (list *libcni.NetworkConfigList, never bool, err error) {
	if list, err = load(f); err == nil {
		return list, false, nil
	}
	b, rerr := readFile(f)
	if rerr != nil {
		return nil, false, rerr
	}
	conf, perr := singlePlugin(b)
	if perr != nil {
		return nil, false, err
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, false, err
	}
	wrapped, err := json.Marshal(map[string]any{"name": conf.Network.Name, "cniVersion": conf.Network.CNIVersion, "plugins": []any{raw}})
	if err != nil {
		return nil, false, err
	}
	if list, err = libcni.NetworkConfFromBytes(wrapped); err != nil {
		return nil, false, err
	}
	return list, singleSaysDisableGC(b), nil
}

// hostLocalDataDir returns the data directory of the host-local a
// plugin's config runs, as host-local reads it: the plugin names it as its
// "ipam", or is host-local itself, which reads its settings from "ipam"
// too (and fails without one); "dataDir" in that object, or
// defaultDataDir. ok: it runs host-local.
func hostLocalDataDir(plugin []byte, defaultDataDir string) (dir string, ok bool) {
	var conf struct {
		Type string `json:"type"`
		IPAM *struct {
			Type    string `json:"type"`
			DataDir string `json:"dataDir"`
		} `json:"ipam"`
	}
	if json.Unmarshal(plugin, &conf) != nil {
		return "", false
	}
	switch {
	case conf.IPAM != nil && conf.IPAM.Type == hostLocalType:
		dir = conf.IPAM.DataDir
	case conf.Type == hostLocalType && conf.IPAM != nil: // run as the plugin itself, it reads "ipam" all the same
		dir = conf.IPAM.DataDir
	default:
		return "", false
	}
	if dir == "" {
		dir = defaultDataDir
	}
	return filepath.Clean(dir), true
}

// hostLocalReleases returns how many times host-local, run by the plugin
// config plugin (itself or as its "ipam"), releases a container on DEL:
// once per range set, as host-local makes them: those of "ranges", one
// more for a legacy "subnet" beside them, and those of a static
// "runtimeConfig" "ipRanges".
func hostLocalReleases(plugin []byte) int {
	var conf struct {
		IPAM struct {
			Subnet string            `json:"subnet"`
			Ranges []json.RawMessage `json:"ranges"`
		} `json:"ipam"`
		RuntimeConfig struct {
			IPRanges []json.RawMessage `json:"ipRanges"`
		} `json:"runtimeConfig"`
	}
	if json.Unmarshal(plugin, &conf) != nil {
		return 1
	}
	n := len(conf.IPAM.Ranges) + len(conf.RuntimeConfig.IPRanges)
	if conf.IPAM.Subnet != "" {
		n++
	}
	return max(1, n)
}

// readReservations lists the reservations of every network directory of
// dataDir: each regular file whose name is an address, but host-local's
// lock and last_reserved_ip.*. Those of a network directory that is a link
// are skipped (reported, never touched): host-local's DEL does not release
// through a link; and a link it cannot follow is not read. It never takes host-local's lock, nor
// writes anything: a file that host-local is writing may read empty, and
// is skipped. A data directory that does not exist holds none (but a link
// to nothing the collector sees, which fails); a file gone meanwhile is
// not reported.
func readReservations(dataDir string) ([]Reservation, []skipped, error) {
	if throughProc(dataDir) {
		// host-local, on the node, reads another directory there than the collector would (another mount namespace).
		return nil, nil, fmt.Errorf("cni: host-local's data directory %s is reached through /proc: what host-local keeps there, the collector cannot see", dataDir)
	}
	nets, err := os.ReadDir(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		if kind, _, _ := pathkind.Of(dataDir); kind == pathkind.Dangling {
			// A link to nothing the collector sees (a path its pod does not mount), or below one: host-local on
			// the node may keep reservations there.
			return nil, nil, fmt.Errorf("cni: host-local's data directory %s is a link to nothing the collector sees, or below one: %w", dataDir, err)
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cni: reading host-local's data directory %s: %w", dataDir, err)
	}
	var rs []Reservation
	var skips []skipped
	for _, nd := range nets {
		r, s := readNetwork(dataDir, nd)
		rs, skips = append(rs, r...), append(skips, s...)
	}
	return rs, skips, nil
}

// readNetwork reads the reservations of one network's directory nd of
// dataDir, and skips what it cannot use (readReservations).
func readNetwork(dataDir string, nd fs.DirEntry) (rs []Reservation, skips []skipped) {
	dir := filepath.Join(dataDir, nd.Name())
	// A network's directory that is a link (to another disk, say): host-local's ADD reserves through it, and
	// its DEL never releases through it (it walks the directory without following the link). Each
	// reservation there is reported, never touched: no DEL can free it.
	linked := nd.Type()&fs.ModeSymlink != 0
	if linked {
		info, err := os.Stat(dir)
		switch {
		case err != nil: // a link the collector cannot follow (into what its pod does not mount): the runtime may
			return nil, []skipped{{File: dir, Why: fmt.Sprintf("a network's directory that is a link the collector cannot follow: %v: its reservations are not read, never touched", err), Unreadable: true}}
		case !info.IsDir():
			return nil, nil
		}
	} else if !nd.IsDir() { // host-local makes directories: a file is someone else's
		return nil, nil
	}
	files, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil { // one network's directory keeps the others' reservations from no one
		return nil, []skipped{{File: dir, Why: fmt.Sprintf("reading host-local's reservations: %v: they are not read", err), Unreadable: true}}
	}
	for _, fe := range files {
		name := fe.Name()
		// host-local's lock and last_reserved_ip.* are no reservations; its DEL walks them all the same, as it
		// walks every file of the directory.
		if name == hostLocalLock || strings.HasPrefix(name, hostLocalLastPrefix) || net.ParseIP(name) == nil {
			// No reservation, and host-local's DEL walks the whole directory all the same: a file it would remove,
			// or may, is told so (walkedByDel), and never touched.
			if s, ok := walkedByDel(dataDir, nd.Name(), name, fe.Type()); ok && !linked {
				skips = append(skips, s)
			}
			continue
		}
		path := filepath.Join(dir, name)
		if !fe.Type().IsRegular() {
			skips = append(skips, walkedIf(!linked, notRegular(dataDir, nd.Name(), name, fe.Type())))
			continue
		}
		r, skip, gone := readReservation(dataDir, nd.Name(), name)
		switch {
		case gone:
		case skip != nil:
			skips = append(skips, walkedIf(!linked, *skip))
		case linked:
			skips = append(skips, skipped{File: path, Written: r.Reserved, ContainerID: r.ContainerID, Unreadable: true, Reservation: &r,
				Why: "a host-local reservation of container " + r.ContainerID + " in a network's directory that is a link (" + dir +
					"): host-local's DEL does not follow it to release the address: reported, never touched"})
		default:
			rs = append(rs, r)
		}
	}
	return rs, skips
}

// walkedIf is s, a skip of a file of a network's directory, as host-local's DEL walks that directory (walked), or, in
// one that is a link, which no DEL walks, a file no DEL removes.
func walkedIf(walked bool, s skipped) skipped {
	if !walked {
		s.DelMay, s.DelID, s.DelIf, s.DelLegacy = false, "", "", false
	}
	return s
}

// notRegular returns the skip of a file of a network's directory, named
// as an address, that is not a regular file: never touched, and what a DEL
// of host-local in its network would do with it. host-local's DEL walks
// the directory and reads every file that is not a directory, following a
// link, to remove those naming the container it releases: a link to a
// regular file naming a container is removed by a DEL of that container
// (skipped.DelID; one naming it alone, skipped.DelLegacy); a directory is walked into, and a FIFO or a device
// may never end its read (skipped.DelMay); a link to a directory, to
// nothing, or to a socket fails its read, and is passed over.
func notRegular(dataDir, network, ip string, mode fs.FileMode) skipped {
	r := Reservation{Network: network, DataDir: dataDir, IP: ip}
	s := skipped{File: r.Path(), Why: "not a regular file (" + mode.String() + "): not host-local's, never touched", Reservation: &r}
	if mode&fs.ModeSymlink == 0 {
		s.DelMay = mode&fs.ModeSocket == 0
		return s
	}
	info, err := os.Stat(r.Path())
	switch {
	case err != nil || info.IsDir() || info.Mode()&fs.ModeSocket != 0:
	case !info.Mode().IsRegular(): // never read: a FIFO's read waits for a writer
		s.DelMay = true
	default:
		read, skip, _ := readReservation(dataDir, network, ip)
		switch {
		case skip == nil:
			s.DelID, s.DelIf, s.Written = read.ContainerID, read.IfName, read.Reserved
		case skip.DelLegacy:
			s.DelID, s.DelLegacy, s.Written = read.ContainerID, true, read.Reserved
		case read.Reserved.IsZero(): // it could not be read: what it names cannot be told
			s.DelMay = true
		}
	}
	return s
}

// walkedByDel tells a file of a network's directory not named as an
// address, which host-local's DEL walks all the same: one that the DEL of a
// container removes (a regular file, or a link to one, naming the container
// and an interface as host-local writes them), or may (a directory, walked
// into; a FIFO or a device, whose read may never end: notRegular). ok is
// false for a file no DEL touches.
func walkedByDel(dataDir, network, name string, mode fs.FileMode) (s skipped, ok bool) {
	if !mode.IsRegular() {
		s = notRegular(dataDir, network, name, mode)
		return s, s.DelMay || s.DelID != ""
	}
	r, skip, _ := readReservation(dataDir, network, name)
	if skip != nil && skip.DelLegacy {
		s := skipped{File: r.Path(), Written: r.Reserved, DelID: r.ContainerID, DelLegacy: true, Reservation: &r,
			Why: "a file not named as an address that holds container ID " + r.ContainerID + " alone: host-local's DEL of it, " +
				"in a chain that runs host-local twice, would remove it; never touched"}
		// host-local's last_reserved_ip, most likely, holding an address: it still holds the ID of a container named
		// as that address (libcni takes one), whose DEL would remove it. Not logged: every network has one.
		s.Quiet = net.ParseIP(r.ContainerID) != nil
		return s, true
	}
	if skip != nil || r.ContainerID == "" {
		return skipped{}, false
	}
	return skipped{File: r.Path(), Written: r.Reserved, DelID: r.ContainerID, DelIf: r.IfName, Reservation: &r,
		Why: "a file not named as an address that names container " + r.ContainerID + ": host-local's DEL of it would remove it; never touched"}, true
}

// readReservation reads one reservation file, as host-local writes it
// (the container ID, "\r\n", the interface name) and as its DEL reads it
// (white space around the whole read past). gone: the file no longer
// exists.
func readReservation(dataDir, network, ip string) (r Reservation, skip *skipped, gone bool) {
	r = Reservation{Network: network, DataDir: dataDir, IP: ip}
	path := r.Path()
	info, b, err := readRegular(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return r, nil, true
	case err != nil:
		return r, &skipped{File: path, Why: err.Error(), Unreadable: true, Reservation: &r}, false
	}
	r.Reserved = info.ModTime()
	// host-local writes the ID, "\r\n" and the interface, and its DEL releases the file that holds exactly that, white
	// space around the whole read past (it compares the file trimmed): so is it read here, and what is freed is what
	// that DEL releases.
	id, ifName, two := strings.Cut(strings.TrimSpace(string(b)), "\r\n")
	r.ContainerID = strings.TrimSpace(id)
	if two {
		r.IfName = ifName
	}
	switch {
	case r.ContainerID == "":
		return r, &skipped{File: path, Written: r.Reserved, Why: "it holds no container ID (host-local may be writing it)", Unreadable: true, Reservation: &r}, false
	case r.IfName == "" || strings.ContainsAny(r.ContainerID+r.IfName, "\r\n") || id != r.ContainerID:
		// Written by a host-local before v0.8 (no interface), or by something else. host-local's DEL of its
		// container removes a file holding the ID alone only when no file of the ID and interface is there: the
		// collector DELs a reservation only while its file is there (freeReservations); but a second host-local
		// in the chain finds none left by the first, and removes it (DelLegacy).
		s := &skipped{File: path, Written: r.Reserved, Why: "it is not a container ID and an interface name on two lines as host-local writes them: never touched",
			Unreadable: true, Reservation: &r}
		if !two && id == r.ContainerID {
			s.DelID, s.DelLegacy = r.ContainerID, true
		}
		return r, s, false
	case utils.ValidateContainerID(r.ContainerID) != nil || utils.ValidateInterfaceName(r.IfName) != nil:
		// No runtime's ADD gives host-local such a container or interface (libcni refuses them), and its DEL would
		// name a cache file of libcni's elsewhere (a path in it): written by something else, never touched.
		return r, &skipped{File: path, Written: r.Reserved, Why: "its container ID or interface is none libcni accepts: never touched",
			Unreadable: true, Reservation: &r}, false
	}
	return r, nil, false
}

// readRegular reads the file at path, following a link, only if it is a regular file when opened: it is opened
// without blocking and told by what was opened, so that a file replaced by a named pipe or a device since it was
// listed is never read (its read may never end).
func readRegular(path string) (fs.FileInfo, []byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file (%s): not read", info.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	return info, b, err
}

// readFile is os.ReadFile of a regular file only (readRegular): whatever the package reads (a cache entry, a
// config, a reservation) may have been replaced by a named pipe since it was listed.
func readFile(path string) ([]byte, error) {
	_, b, err := readRegular(path)
	return b, err
}
