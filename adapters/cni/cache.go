package cni

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types/create"

	"github.com/podsweeper/podsweeper/internal/pathkind"
)

// The CNI_ARGS keys a runtime (containerd, CRI-O) passes for a pod's sandbox.
const (
	argPodUID       = "K8S_POD_UID"
	argPodNamespace = "K8S_POD_NAMESPACE"
	argPodName      = "K8S_POD_NAME"
)

// cacheKind is the kind libcni writes in every cache entry it reads back
// (libcni.CNICacheV1).
const cacheKind = "cniCacheV1"

// cacheEntry is the JSON libcni writes for an attachment
// (<cacheDir>/results/<network>-<containerID>-<ifName>), read with the
// same field names as libcni's own (unexported) cachedInfo.
type cacheEntry struct {
	Kind           string         `json:"kind"`
	ContainerID    string         `json:"containerId"`
	Config         []byte         `json:"config"`
	IfName         string         `json:"ifName"`
	NetworkName    string         `json:"networkName"`
	NetNS          string         `json:"netns,omitempty"`
	CniArgs        [][2]string    `json:"cniArgs,omitempty"`
	CapabilityArgs map[string]any `json:"capabilityArgs,omitempty"`
	// Result is the ADD's result, whose addresses AddressStatus tells.
	Result json.RawMessage `json:"result,omitempty"`
}

// attachment is one cache entry of a pod: a network attached to an
// interface of a sandbox, identified by (Network, ContainerID, IfName).
type attachment struct {
	// File is the entry's file name in the results directory.
	File string
	// Written is the entry's modification time: libcni writes it once,
	// right after every plugin's ADD succeeded.
	Written time.Time
	cacheEntry
	PodUID, PodNamespace, PodName string
	// List is the cached config, parsed as libcni does (List.DisableGC
	// included). A single plugin's config has no Plugins.
	List *libcni.NetworkConfigList
}

// skipped is a cache entry that is not a pod's attachment the collector
// may act on, and why.
type skipped struct {
	File string
	// ContainerID and PodUID are the entry's, when its JSON could be read.
	ContainerID, PodUID string
	// Written is when the file was last written.
	Written time.Time
	Why     string
	// Quiet: not logged (Why is told on the address page all the same).
	Quiet bool
	// Unreadable: the file cannot be read or parsed as libcni's (as
	// opposed to an attachment of no pod).
	Unreadable bool
	// Never are the networks its cached config, when it parses, says
	// "disableGC" of: never touched, though the entry itself is not used.
	Never []string
	// Entry is a cache entry's JSON as far as it could be read (its
	// result's addresses, for AddressStatus); nil when none could.
	Entry *attachment
	// Reservation is a host-local reservation file's, as far as it could be
	// read (its address is its file's name); nil for any other file.
	Reservation *Reservation
	// DelMay: a file of a network's host-local directory that a DEL of any
	// reservation of the network may remove, or never end reading (its
	// content cannot be told: notRegular). DelID and DelIf: one that a DEL
	// of this container and interface in its network removes. DelLegacy:
	// the file holds DelID alone, as host-local before v0.8 wrote it: a DEL
	// of that container, any interface, removes it in a network where
	// host-local releases the container more than once (confNet.HostLocals).
	DelMay       bool
	DelID, DelIf string
	DelLegacy    bool
	// Untold: what the file holds cannot be told (it cannot be read, is cut
	// short, or is a link to nothing the collector sees): AddressStatus
	// says so in Unread.
	Untold bool
	// Unsure are the networks a cache entry cut short (being written) is
	// of, whose cached config is cut too: whether it says disableGC cannot
	// be told yet (view.writing).
	Unsure []string
}

// neverNets returns the networks a's cached config says "disableGC" of, when it parsed: its network and the
// config's own name, should the two differ.
func neverNets(a attachment) []string {
	if a.List == nil || !a.List.DisableGC && !pluginSaysDisableGC(a) {
		return nil
	}
	if a.List.Name != a.NetworkName && a.NetworkName != "" {
		return []string{a.NetworkName, a.List.Name}
	}
	return []string{a.List.Name}
}

// cacheReader reads libcni's cache (dir, Options.CacheDir) and the
// runtime's network configs (confDir, Options.ConfDir).
type cacheReader struct {
	dir, confDir string
	// skips logs each entry the Collector's reads skip, once (Collector.read).
	skips *skipLog
}

// view is one read of the cache.
type view struct {
	// atts are the pods' attachments, those of disableGC networks included.
	atts []attachment
	// unusable are the entries that cannot be read or used for a DEL.
	unusable []skipped
	// unused are the entries not used whose content could be read (links,
	// names not libcni's, entries of no pod's arguments): what their
	// network namespace path tells counts for their sandbox (observe).
	unused []skipped
	// keepNets are the networks whose config in ConfDir says disableGC, or
	// the cached config of an entry not used (skipped.Never).
	keepNets map[string]bool
	// writing are the networks whose config is being written, each with
	// what is: a config of ConfDir (readConfDir), or a cache entry cut
	// short whose cached config is cut (skipped.Unsure); whether it says
	// disableGC cannot be told yet.
	writing map[string]string
}

// writingOf says what is being written of network, for errors and the
// address page: "" when nothing is.
func (v view) writingOf(network string) string {
	return v.writing[network]
}

// collectable reports whether the collector may DEL a: its network's
// config, cached or in ConfDir, does not say disableGC, and is not being
// written.
func (v view) collectable(a attachment) bool {
	return !v.disableGC(a) && v.writing[a.NetworkName] == ""
}

// disableGC reports whether a's network's config, cached or in ConfDir,
// says disableGC; a of an entry skipped may have no config (none cached,
// or one that does not read).
func (v view) disableGC(a attachment) bool {
	return a.List != nil && a.List.DisableGC || v.keepNets[a.NetworkName] || pluginSaysDisableGC(a)
}

// confDirError is the error of a read of the cache whose config directory
// alone could not be read (readConfDir): which networks it keeps cannot be
// told, and nothing may be decided on the read; the cache itself was read.
type confDirError struct{ err error }

func (e confDirError) Error() string { return e.err.Error() }
func (e confDirError) Unwrap() error { return e.err }

// read reads the cache and the config directory: the view, and the
// entries that are never deleted (of no pod, unreadable, unusable for a
// DEL, of a disableGC network), for the log. A config directory that
// cannot be read fails it with a confDirError, and the view is then the
// cache's all the same, with no network of ConfDir kept: it may tell what
// the cache holds (the address page, the sandboxes a DestroyPU kept for
// it), and decides nothing.
func (r cacheReader) read() (view, []skipped, error) {
	keep, writing, confErr := disableGCNetworks(r.confDir)
	atts, skips, err := readCache(r.dir)
	if err != nil {
		return view{}, nil, err
	}
	v := view{atts: atts, keepNets: keep}
	for n, f := range writing {
		v.setWriting(n, "the config "+f+" of ConfDir")
	}
	for _, s := range skips {
		if s.Unreadable {
			v.unusable = append(v.unusable, s)
		}
		if s.Entry != nil {
			v.unused = append(v.unused, s)
		}
		for _, n := range s.Unsure {
			v.setWriting(n, "libcni's cache entry "+s.File+", cut short (being written)")
		}
		for _, n := range s.Never { // a cached config that says disableGC keeps its network, though its entry is not used
			if v.keepNets == nil {
				v.keepNets = map[string]bool{}
			}
			v.keepNets[n] = true
		}
	}
	for _, a := range atts { // an entry's cached disableGC keeps its network for every entry of it
		if a.List.DisableGC || pluginSaysDisableGC(a) {
			if v.keepNets == nil {
				v.keepNets = map[string]bool{}
			}
			v.keepNets[a.NetworkName] = true
		}
	}
	for _, a := range atts {
		if v.disableGC(a) {
			skips = append(skips, skipped{File: a.File, Written: a.Written, Why: "network " + a.NetworkName + " has disableGC: never touched"})
		}
	}
	if confErr != nil {
		return v, skips, confDirError{confErr}
	}
	return v, skips, nil
}

// setWriting records that what of network is being written, the first
// told of it kept.
func (v *view) setWriting(network, what string) {
	if v.writing == nil {
		v.writing = map[string]string{}
	}
	if v.writing[network] == "" {
		v.writing[network] = what
	}
}

// readCache reads every entry of dir's results directory. An entry that
// vanished meanwhile (the runtime's own DEL removed it) is not reported. A
// results directory that does not exist holds nothing.
func readCache(dir string) ([]attachment, []skipped, error) {
	results := filepath.Join(dir, "results")
	entries, err := os.ReadDir(results)
	if errors.Is(err, fs.ErrNotExist) {
		if kind, _, _ := pathkind.Of(results); kind == pathkind.Dangling {
			// A link to nothing the collector sees, or below one: the runtime's libcni may keep entries there.
			return nil, nil, fmt.Errorf("cni: libcni's cache %s is a link to nothing the collector sees, or below one: %w", results, err)
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cni: reading libcni's cache %s: %w", results, err)
	}
	var atts []attachment
	var skips []skipped
	for _, de := range entries {
		if de.Type()&fs.ModeSymlink != 0 {
			// libcni writes regular files, and a DEL through a link would remove the link alone: never touched. The
			// runtime's libcni reads through it all the same: what it holds is told, and its disableGC kept.
			skips = append(skips, readLink(results, de.Name()))
			continue
		}
		if !de.Type().IsRegular() { // a directory, a pipe: someone else's, left alone, and never read (a pipe's read blocks)
			skip := skipped{File: de.Name(), Why: "not a regular file (" + de.Type().String() + "): not libcni's, never touched"}
			// What a pipe or a device holds cannot be told: it may be any pod's entry, as one that cannot be read.
			skip.Unreadable, skip.Untold = !de.IsDir(), !de.IsDir()
			skips = append(skips, skip)
			continue
		}
		a, skip, gone := readEntry(results, de.Name())
		switch {
		case gone:
		case skip != nil:
			skips = append(skips, *skip)
		default:
			atts = append(atts, a)
		}
	}
	return atts, skips, nil
}

// readLink reads the cache entry a link of the results directory dir
// names, as the runtime's libcni would, for what it holds and says: it is
// never used (Unreadable), whatever it holds.
func readLink(dir, name string) skipped {
	if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.Mode().IsRegular() {
		// A named pipe would block the read, and a device or a directory is no entry libcni wrote.
		return skipped{File: name, Why: "a link to what is no regular file (" + fi.Mode().Type().String() + "): never read, never touched",
			Unreadable: true, Untold: true}
	}
	a, skip, gone := readEntry(dir, name)
	switch {
	case gone: // what the runtime's libcni reads there may be any entry of the networks its name may be of
		return skipped{File: name, Why: "a link to nothing the collector sees: not libcni's, never touched", Unreadable: true, Untold: true,
			Unsure: fileNetworks(name)}
	case skip != nil:
		skip.Why, skip.Unreadable = "a link, to an entry that is not used: "+skip.Why+": never touched", true
		return *skip
	}
	return skipped{File: name, ContainerID: a.ContainerID, PodUID: a.PodUID, Written: a.Written, Unreadable: true,
		Why: "a link (libcni writes regular files, and its DEL would remove the link alone): never touched", Never: neverNets(a), Entry: &a}
}

// readEntry reads one cache file. gone: the file no longer exists.
func readEntry(dir, name string) (a attachment, skip *skipped, gone bool) {
	path := filepath.Join(dir, name)
	info, err := os.Stat(path)
	if err == nil {
		var b []byte
		if b, err = readFile(path); err == nil {
			a, err = parseEntry(b)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return a, nil, true
	case err != nil:
		var written time.Time
		if info != nil {
			written = info.ModTime()
		}
		a.File, a.Written = name, written
		if a.List == nil && len(bytes.TrimSpace(a.Config)) > 0 { // it failed before its config was read: its disableGC counts
			if list, lerr := libcni.NetworkConfFromBytes(a.Config); lerr == nil {
				a.List = list
			}
		}
		skip := &skipped{File: name, ContainerID: a.ContainerID, PodUID: a.PodUID, Written: written, Why: err.Error(), Unreadable: true,
			Never: neverNets(a), Entry: &a}
		if b, rerr := readFile(path); rerr != nil || !json.Valid(b) {
			// Unreadable, or cut short: libcni writes an entry in place, and a read may catch it half-written.
			skip.Untold = true
			if rerr == nil {
				network, never, told, cut := cutEntryNetwork(b)
				switch {
				case never:
					skip.Never = append(skip.Never, network)
				case !told && network != "":
					skip.Unsure = []string{network}
				case !told && cut: // cut before its network is told: its file name tells what it may be of
					skip.Unsure = fileNetworks(name)
				}
			}
		}
		return a, skip, false
	}
	a.File, a.Written = name, info.ModTime()
	if want := a.NetworkName + "-" + a.ContainerID + "-" + a.IfName; name != want && a.PodUID != "" {
		// libcni finds, and removes after a DEL, the entry of its network by that name: a DEL of this one
		// would leave it, and run again at every call.
		return a, &skipped{File: name, ContainerID: a.ContainerID, PodUID: a.PodUID, Written: a.Written,
			Why: "its file name is not libcni's for its network, " + want, Unreadable: true, Never: neverNets(a), Entry: &a}, false
	}
	if a.PodUID == "" || a.PodNamespace == "" || a.PodName == "" {
		return a, &skipped{File: name, Written: a.Written, ContainerID: a.ContainerID, // it names its container (row 16)
			Why:   "no K8S_POD_UID, K8S_POD_NAMESPACE or K8S_POD_NAME in its CNI_ARGS: not a pod's attachment, or of another runtime",
			Never: neverNets(a), Entry: &a}, false
	}
	return a, nil, false
}

// cutEntryNetwork reads, of a cache entry cut short, its network and
// whether its cached config says disableGC, as far as they are written:
// told, its config is whole (never: it says disableGC); network "" when
// neither the config nor "networkName" is.
func cutEntryNetwork(b []byte) (network string, never, told, cut bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false, false, len(bytes.TrimSpace(b)) == 0 // empty: the first instant of its write
	}
	depth, key := 1, ""
	for depth > 0 {
		t, err := dec.Token()
		if err != nil { // cut short here, or not JSON from here on (garbage, not an entry being written)
			cut = errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
			break
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				if depth == 1 {
					key = "" // an object or a list is no value read here
				}
				depth++
			} else {
				depth--
			}
			continue
		}
		if depth != 1 {
			continue
		}
		if key == "" {
			key, _ = t.(string)
			continue
		}
		v, _ := t.(string)
		switch key {
		case "networkName":
			if network == "" {
				network = v
			}
		case "config":
			conf, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				break
			}
			list, err := libcni.NetworkConfFromBytes(conf)
			if err != nil {
				break
			}
			a := attachment{List: list}
			network, never, told = list.Name, list.DisableGC || pluginSaysDisableGC(a), true
		}
		key = ""
	}
	return network, never, told, cut
}

// fileNetworks returns the networks a cache entry's file name may be of:
// libcni names it <network>-<containerID>-<ifName>, and a network's name
// may hold "-", so every prefix before a "-" is one.
func fileNetworks(name string) []string {
	var out []string
	for i := range len(name) {
		if name[i] == '-' && i > 0 {
			out = append(out, name[:i])
		}
	}
	return out
}

// errEntry marks a cache entry that cannot be read as libcni's.
var errEntry = errors.New("not a libcni cache entry")

// parseEntry parses the JSON of a cache entry.
func parseEntry(b []byte) (attachment, error) {
	var a attachment
	// Whose it is first, so that an entry of a pod that cannot be used is told as that pod's (ErrUnusableEntry): whole
	// JSON with a field of the wrong type is decoded as far as it can be (encoding/json), its CNI_ARGS too.
	jerr := json.Unmarshal(b, &a.cacheEntry)
	for _, kv := range a.CniArgs {
		switch kv[0] {
		case argPodUID:
			a.PodUID = kv[1]
		case argPodNamespace:
			a.PodNamespace = kv[1]
		case argPodName:
			a.PodName = kv[1]
		}
	}
	switch {
	case jerr != nil:
		return a, fmt.Errorf("%w: %w", errEntry, jerr)
	case a.Kind != cacheKind:
		return a, fmt.Errorf("%w: kind %q, want %q", errEntry, a.Kind, cacheKind)
	case a.ContainerID == "" || a.NetworkName == "" || a.IfName == "":
		return a, fmt.Errorf("%w: containerId %q, networkName %q, ifName %q: all three are required", errEntry, a.ContainerID, a.NetworkName, a.IfName)
	case len(bytes.TrimSpace(a.Config)) == 0:
		return a, fmt.Errorf("%w: no config", errEntry)
	}
	// libcni's own parser: "disableGC" may be a bool or a string, and a
	// single plugin's config (no "plugins") parses as a list of none.
	list, err := libcni.NetworkConfFromBytes(a.Config)
	if err != nil {
		return a, fmt.Errorf("%w: its config: %w", errEntry, err)
	}
	a.List = list
	// What a DEL of it would run: a conflist's plugins, or a single
	// plugin's config as the runtime's AddNetwork cached it. Anything else
	// would run no plugin at all, and libcni would then remove the entry
	// as if its DEL had freed something.
	if list.Name != a.NetworkName {
		return a, fmt.Errorf("%w: its config is of network %q, the entry of %q", errEntry, list.Name, a.NetworkName)
	}
	cniVersion := list.CNIVersion
	if len(list.Plugins) == 0 {
		conf, err := singlePlugin(a.Config)
		if err != nil {
			return a, fmt.Errorf("%w: its config runs no plugin: %w", errEntry, err)
		}
		cniVersion = conf.Network.CNIVersion
	}
	if err := cachedResultLoads(a.Result, cniVersion); err != nil {
		return a, fmt.Errorf("%w: its cached result cannot be loaded for a DEL: %w", errEntry, err)
	}
	return a, nil
}

// cachedResultLoads loads an entry's cached result as libcni does before a DEL (CNIConfig.getCachedResult: the result
// made anew from its JSON, then converted to the config's version), which fails the DEL when it cannot: such an entry
// is unusable, and skipped as every unusable entry is.
func cachedResultLoads(raw json.RawMessage, cniVersion string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("null") // as libcni marshals a result it did not find
	}
	r, err := create.CreateFromBytes(raw)
	if err != nil {
		return err
	}
	_, err = r.GetAsVersion(cniVersion)
	return err
}

// singlePlugin parses b as a single plugin's config (a "type" and no
// "plugins"), as libcni's AddNetwork caches it.
func singlePlugin(b []byte) (*libcni.PluginConfig, error) {
	conf, err := libcni.NetworkPluginConfFromBytes(b)
	if err != nil {
		return nil, err
	}
	if conf.Network == nil || conf.Network.Type == "" {
		return nil, errors.New("no plugins and no type")
	}
	return conf, nil
}

// sandbox is the attachments of one sandbox of a pod.
type sandbox struct {
	ID string
	// Created is when it was created: the runtime's CreatedAt where the
	// runtime lists it, otherwise when its first attachment was written.
	Created time.Time
	// Earliest is Created, or the earliest of the times the runtime told
	// when it lists it at two.
	Earliest time.Time
	Atts     []attachment
}

// sandboxesOf returns the sandboxes of the pod uid among atts, oldest
// first (by Created, then by ID, so that the order does not depend on the
// directory's), rv telling when those it lists were created.
func sandboxesOf(atts []attachment, uid string, rv runtimeView) []sandbox {
	var sbs []sandbox
	for _, a := range atts {
		if a.PodUID != uid {
			continue
		}
		i := slices.IndexFunc(sbs, func(s sandbox) bool { return s.ID == a.ContainerID })
		if i < 0 {
			sbs = append(sbs, sandbox{ID: a.ContainerID, Created: a.Written})
			i = len(sbs) - 1
		}
		if a.Written.Before(sbs[i].Created) {
			sbs[i].Created = a.Written
		}
		sbs[i].Atts = append(sbs[i].Atts, a)
	}
	for i := range sbs {
		sbs[i].Created, sbs[i].Earliest = rv.created(sbs[i].ID, uid, sbs[i].Created)
	}
	slices.SortFunc(sbs, func(x, y sandbox) int {
		return cmp.Or(x.Created.Compare(y.Created), strings.Compare(x.ID, y.ID))
	})
	for _, s := range sbs {
		slices.SortFunc(s.Atts, func(x, y attachment) int {
			return cmp.Or(strings.Compare(x.NetworkName, y.NetworkName), strings.Compare(x.IfName, y.IfName))
		})
	}
	return sbs
}

// pluginSaysDisableGC reports whether the one plugin of a's cached list says "disableGC": true itself: a single
// plugin's .conf, which the runtime loads as a list of one (libcni's ConfListFromConf), keeps its key there.
func pluginSaysDisableGC(a attachment) bool {
	return a.List != nil && len(a.List.Plugins) == 1 && singleSaysDisableGC(a.List.Plugins[0].Bytes)
}
