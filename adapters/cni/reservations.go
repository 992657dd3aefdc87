package cni

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr"
	"golang.org/x/time/rate"

	"github.com/podsweeper/podsweeper/ports"
)

// DefaultReservationGrace is Options.ReservationGrace when left at zero:
// as DefaultNewestSandboxTimeout, longer than the kubelet's default
// deadline of a RunPodSandbox (4 minutes: twice its
// --runtime-request-timeout), after which no sandbox is still being
// created. A kubelet given a longer --runtime-request-timeout wants more
// than twice it.
const DefaultReservationGrace = 5 * time.Minute

// LogMessageReservationFreed is the message of the line the Collector
// logs (at info) for each host-local reservation it freed, its own DEL's
// or, with "by", another's of its container and interface (one DEL releases
// them all): keep it out of a logger's sampling, as LogMessageFreed.
const LogMessageReservationFreed = "host-local reservation freed"

// LogMessageReservationWouldFree is the message of the line a dry run's
// Collector logs (at info) once for each host-local reservation it would
// free, while its file holds it: the only record of which addresses, to
// keep out of a logger's sampling too.
const LogMessageReservationWouldFree = "dry run: would free a host-local reservation"

// LogMessageReservationSkipped is the message of the line the Collector
// logs (at info) once for each host-local reservation file it skips or
// reports and never touches (one of a network whose config is gone, say):
// the only record of it, to keep out of a logger's sampling too.
const LogMessageReservationSkipped = "skipping a host-local reservation: it is never touched"

// reservationDelTimeout bounds one DEL of a reservation: a plugin that
// hangs must not stop the resync loop.
const reservationDelTimeout = time.Minute

// Observer hears what the Collector does with host-local's reservations
// (Options.Observer), each by its network and its reason (ReasonNoSandbox,
// ReasonConfigGone). Its methods are called from Resync's goroutine and
// must not block. adapters/k8s's ReservationMetrics is one.
type Observer interface {
	// ReservationFreed: a DEL freed a reservation.
	ReservationFreed(network, reason string)
	// ReservationFreeFailed: a DEL of a reservation failed, or succeeded,
	// and host-local still holds it; it is tried again at the next resync.
	// A DEL that failed after host-local released the reservation freed it
	// (ReservationFreed).
	ReservationFreeFailed(network, reason string)
	// ReservationWouldFree: a dry run (Options.DryRun) would free a
	// reservation; told once for each.
	ReservationWouldFree(network, reason string)
	// ReservationReported: a reservation is reported and never touched
	// (ReasonConfigGone); told once for each.
	ReservationReported(network, reason string)
	// ReservationNetwork: a network of ConfDir runs host-local; told at
	// each read of its reservations, so that its counts show at 0 before
	// the first.
	ReservationNetwork(network string)
}

// hostLocal frees host-local's reservations that the cache does not
// account for (decideReservation), once each resync: where to read them,
// the grace, the dry run and what it would free, the Observer, and the log
// of the files it skips or reports. Its methods are safe from any
// goroutine.
type hostLocal struct {
	confDir, defaultDataDir string
	grace                   time.Duration
	dryRun                  bool
	limit                   *rate.Limiter // the frees' rate (Options.ReservationRate); nil: none
	observer                Observer
	// skips logs each file skipped or reported once.
	skips *skipLog

	mu sync.Mutex
	// would is what the last round of a dry run would have freed; told
	// holds those the Observer was told of and whose file still holds
	// them, by path, container and interface (toldKey).
	would []Reservation
	told  map[string]bool
}

// reservationView is one read of host-local's reservations.
type reservationView struct {
	rs []Reservation
	// nets are ConfDir's networks that run host-local.
	nets map[string]hostLocalNet
	// read are the data directories it read; blind those (or the
	// directories in them) it could not read.
	read, blind []string
	// writing are the networks whose config in ConfDir is being written,
	// each with its file: which data directories it names, and whether it
	// says disableGC, cannot be told yet.
	writing map[string]string
	// untouched are the reservation files it read and never touches (a
	// link's, one that does not read as host-local's), and blind the
	// directories it could not read, for AddressStatus.
	untouched, blindSkips []skipped
	// dels is what a DEL of a reservation releases with it (released), by
	// data directory, network and container ID, or by data directory and
	// network alone for a file any DEL of the network may remove.
	dels map[delKey]delGroup
}

// delKey keys reservationView.dels: a data directory, a network, a
// container ID and an interface (both "" for any; the interface alone ""
// for the container's files that hold its ID alone, delGroup.legacy):
// host-local's DEL of a container and interface walks its network's
// directory in each data directory its config names, and releases the
// files that hold exactly those two.
type delKey struct{ dataDir, network, containerID, ifName string }

// delGroup is what host-local's DEL of one reservation touches besides it:
// it walks the network's directory and removes every file naming the
// container, whichever address (notRegular).
type delGroup struct {
	newest    time.Time // the newest reservation's Reserved
	untouched string    // a file the collector never touches that it would remove too, or may; "" none
	// legacy is a file that holds the container's ID alone, which the DEL
	// removes too when the network's config runs host-local twice or more
	// (confNet.HostLocals: the releases after the first match nothing and
	// fall back to it); "" none.
	legacy string
}

// released returns what a DEL of r would release with it, run with n,
// its network's config as it is then (read again right before the DEL):
// the newest reservation among those naming its container and interface
// in its network, and a file the collector never touches that the DEL
// would remove too, or may ("" for none).
func (v reservationView) released(r Reservation, n hostLocalNet) (newest time.Time, untouched string) {
	for _, d := range delDirs(r, n) {
		g := v.dels[delKey{d, r.Network, r.ContainerID, r.IfName}]
		if g.newest.After(newest) {
			newest = g.newest
		}
		if n.HostLocals >= 2 { // a file of its container's ID alone, in d: keyed by no interface
			untouched = cmp.Or(untouched, v.dels[delKey{dataDir: d, network: r.Network, containerID: r.ContainerID}].legacy)
		}
		untouched = cmp.Or(untouched, g.untouched, v.dels[delKey{dataDir: d, network: r.Network}].untouched)
	}
	return newest, untouched
}

// delDirs are the data directories host-local's DEL of r walks, run with n,
// its network's config: r's own and each n names.
func delDirs(r Reservation, n hostLocalNet) []string {
	dirs := []string{r.DataDir}
	for _, d := range n.DataDirs {
		if d = canonicalDir(d); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// unknown reports whether the view says nothing of what path holds: a
// file outside every data directory it read (one no config names this
// round, as while a CNI installer writes its config anew), in one it
// could not read, or of a network whose config is being written, is
// neither there nor gone. What a round told of such a file stays told.
func (v reservationView) unknown(path string) bool {
	return !under(path, v.read) || under(path, v.blind) || v.writing[networkOf(path)] != ""
}

// read reads ConfDir's networks that run host-local, then the reservations
// of each data directory they set and of the default one; it logs once
// each file it skips, and each data directory it cannot read (whose
// reservations it passes over, keeping them).
func (h *hostLocal) read() (reservationView, error) {
	nets, writing, err := hostLocalNetworks(h.confDir, h.defaultDataDir)
	if err != nil {
		return reservationView{}, err
	}
	dirs := []string{canonicalDir(h.defaultDataDir)}
	for _, n := range nets {
		for _, d := range n.DataDirs {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	slices.Sort(dirs)
	if h.observer != nil {
		for _, name := range slices.Sorted(maps.Keys(nets)) {
			h.observer.ReservationNetwork(name)
		}
	}
	v := reservationView{nets: nets, writing: writing}
	var skips []skipped
	for _, d := range dirs {
		rs, s, err := readReservations(d)
		if err != nil { // one network's data directory keeps the others' reservations from no one
			skips = append(skips, skipped{File: d, Why: err.Error() + ": its reservations are not read", Unreadable: true})
			continue
		}
		v.rs, skips, v.read = append(v.rs, rs...), append(skips, s...), append(v.read, d)
	}
	slices.SortFunc(v.rs, func(x, y Reservation) int {
		return cmp.Or(strings.Compare(x.DataDir, y.DataDir), strings.Compare(x.Network, y.Network), strings.Compare(x.IP, y.IP))
	})
	for _, r := range v.rs {
		if _, ok := v.config(r); !ok && writing[r.Network] == "" { // a config being written may be its network's
			skips = append(skips, skipped{File: r.Path(), Written: r.Reserved, ContainerID: r.ContainerID,
				Why: "a host-local reservation of container " + r.ContainerID + ": no config in ConfDir names network " + r.Network +
					" with host-local and data directory " + r.DataDir + ": reported, never touched"})
		}
	}
	for _, s := range skips {
		if s.Unreadable {
			v.blind = append(v.blind, s.File)
		}
		if s.Reservation != nil {
			v.untouched = append(v.untouched, s)
		} else if s.Unreadable {
			v.blindSkips = append(v.blindSkips, s)
		}
	}
	v.index()
	// A reservation reported is told once while its file holds it, whatever the rounds between say of its config (an
	// installer that writes it anew): what the view holds, or says nothing of, is not forgotten.
	held := make(map[string]bool, len(v.rs))
	for _, r := range v.rs {
		held[r.Path()] = true
	}
	for _, s := range h.skips.report(skips, func(f string) bool { return held[f] || v.unknown(f) }) {
		if s.ContainerID != "" && !s.Unreadable && h.observer != nil {
			h.observer.ReservationReported(networkOf(s.File), ReasonConfigGone)
		}
	}
	return v, nil
}

// index makes v.dels of v.rs and v.untouched.
func (v *reservationView) index() {
	v.dels = map[delKey]delGroup{}
	for _, r := range v.rs {
		k := delKey{r.DataDir, r.Network, r.ContainerID, r.IfName}
		if g := v.dels[k]; r.Reserved.After(g.newest) {
			g.newest = r.Reserved
			v.dels[k] = g
		}
	}
	for _, s := range v.untouched {
		if s.DelLegacy { // the container's DELs, any interface, should its network run host-local twice (released)
			k := delKey{dataDir: s.Reservation.DataDir, network: s.Reservation.Network, containerID: s.DelID}
			if g := v.dels[k]; g.legacy == "" {
				g.legacy = s.File
				v.dels[k] = g
			}
			continue
		}
		k := delKey{dataDir: s.Reservation.DataDir, network: s.Reservation.Network, containerID: s.DelID, ifName: s.DelIf}
		if g := v.dels[k]; (s.DelMay || s.DelID != "") && g.untouched == "" {
			g.untouched = s.File
			v.dels[k] = g
		}
	}
}

// untouchedNow is what released tells of the files a DEL of r would
// remove that the collector never touches, read again as r's network's
// directories are now, in every data directory its DEL walks (n, its
// network's config then): "" none; a directory that cannot be read is one.
func untouchedNow(r Reservation, n hostLocalNet) string {
	var v reservationView
	for _, d := range delDirs(r, n) {
		dir := filepath.Join(d, r.Network)
		info, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return dir + " (not read)"
		}
		if info.Mode()&fs.ModeSymlink != 0 && d == r.DataDir { // r's own, made a link since the round read it: no DEL releases through it
			return dir + " (a link)"
		}
		rs, skips := readNetwork(d, fs.FileInfoToDirEntry(info))
		v.rs = append(v.rs, rs...)
		for _, s := range skips {
			if s.Reservation == nil && s.Unreadable {
				return dir + " (not read)"
			}
			if s.Reservation != nil {
				v.untouched = append(v.untouched, s)
			}
		}
	}
	v.index()
	_, untouched := v.released(r, n)
	return untouched
}

// networkOf returns the network of a reservation's path, its directory.
func networkOf(path string) string {
	parts := strings.Split(path, string(os.PathSeparator))
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2]
}

// config returns the current config of r's network, when one in ConfDir
// names it with host-local and r's data directory.
func (v reservationView) config(r Reservation) (hostLocalNet, bool) {
	n, ok := v.nets[r.Network]
	return n, ok && slices.Contains(n.DataDirs, r.DataDir)
}

// wouldFree records the round of a dry run: rs is all it would free, of
// the reservations read then (v; nil: none could be read). It tells the
// Observer of those it was not told of yet, and returns them. A
// reservation told stays told while its file holds it, whatever the rounds
// between would free (the Runtime failed in one) or could not read
// (reservationView.unknown): it is forgotten once it is seen gone.
func (h *hostLocal) wouldFree(rs []Reservation, v *reservationView) (fresh []Reservation) {
	fresh = h.recordWould(rs, v)
	if h.observer != nil { // told with no lock held: the Observer may ask the Collector (WouldFree)
		for _, r := range fresh {
			h.observer.ReservationWouldFree(r.Network, ReasonNoSandbox)
		}
	}
	return fresh
}

// recordWould is wouldFree's record, under h.mu: it returns the
// reservations to tell.
func (h *hostLocal) recordWould(rs []Reservation, v *reservationView) (fresh []Reservation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// In the order of their files, as the round read them (its data directories, networks and files by name): a
	// DEL's group is told together, and its siblings may come after another's.
	h.would = slices.SortedStableFunc(slices.Values(rs), func(a, b Reservation) int {
		return cmp.Or(strings.Compare(a.DataDir, b.DataDir), strings.Compare(a.Network, b.Network), strings.Compare(a.IP, b.IP))
	})
	told := make(map[string]bool, len(h.told))
	if v == nil {
		told = h.told
	} else {
		for key := range h.told {
			if v.unknown(strings.SplitN(key, "\x00", 2)[0]) {
				told[key] = true
			}
		}
		for _, r := range v.rs {
			if key := toldKey(r); h.told[key] {
				told[key] = true
			}
		}
	}
	for _, r := range rs {
		key := toldKey(r)
		if !told[key] {
			told[key] = true
			fresh = append(fresh, r)
		}
	}
	h.told = told
	return fresh
}

// toldKey names a reservation in hostLocal.told: its file, its container
// and its interface, so that an address reserved anew is told anew.
func toldKey(r Reservation) string { return r.Path() + "\x00" + r.ContainerID + "\x00" + r.IfName }

// WouldFree returns the host-local reservations that the last resync of a
// dry run (Options.DryRun) found it would free, in the order of their
// files (by data directory, network, then file name): exactly those a
// resync without the dry run would have DELed then.
// It returns none when the Collector is not a dry run, or before its first
// resync.
func (c *Collector) WouldFree() []Reservation {
	c.hostLocal.mu.Lock()
	defer c.hostLocal.mu.Unlock()
	return slices.Clone(c.hostLocal.would)
}

// freeReservations is one round of the reservations' sweep, run by
// Resync: it reads libcni's cache, then host-local's reservations, then,
// only when a reservation needs it, the Runtime's sandboxes (read last, so
// that a sandbox created meanwhile is listed), asks decideReservation for
// each, records every decision (AddressHandler), and DELs those it frees (a
// dry run goes the same way, its turns waited for and the Runtime asked
// again as a real round's, and records each that recheckedDel would have
// DELed, WouldFree). Each DEL goes through recheckedDel:
// decided again on ConfDir read right before it and, once time has passed
// since the round's list (a turn waited for under the rate, a DEL run), on
// the Runtime asked again then, whose answer the rest of the round is
// decided on. A DEL that fails is logged and tried
// again at the next round.
func (c *Collector) freeReservations(ctx context.Context) {
	// The cache first: a reservation the runtime's own DEL releases while the round runs is either named by the
	// cache read then or gone from the reservations read after.
	v, skips, err := c.cache.read()
	if err != nil {
		c.hostLocal.wouldFree(nil, nil) // a round that frees nothing, and tells nothing anew
		c.log.Error(err, "reading libcni's cache for host-local's reservations failed; will read it again at the next resync")
		return
	}
	read := time.Now() // what the page tells as ReservationsRead: a reservation made since is not in rv
	rv, err := c.hostLocal.read()
	if err != nil {
		c.hostLocal.wouldFree(nil, nil)
		c.log.Error(err, "reading host-local's reservations failed; will read them again at the next resync")
		return
	}
	if len(rv.rs) == 0 {
		c.addresses.round(read, time.Now(), nil, nil, rv.untouched, rv.blindSkips)
		c.hostLocal.wouldFree(nil, &rv)
		return
	}
	cached := cachedIDs(v, skips)
	// A network whose cached config (one its attachments were added with) says disableGC is never touched, whatever
	// ConfDir's says now.
	cachedNever := map[string]bool{}
	for _, a := range v.atts {
		if a.List.DisableGC || pluginSaysDisableGC(a) {
			cachedNever[a.NetworkName] = true
		}
	}
	for _, s := range skips { // an entry not used (its result does not load, of another runtime) still says so
		for _, n := range s.Never {
			cachedNever[n] = true
		}
	}
	var run runtimeView
	needed := slices.ContainsFunc(rv.rs, func(r Reservation) bool {
		n, ok := rv.config(r)
		return ok && !n.Never && rv.writing[r.Network] == "" && v.writingOf(r.Network) == "" && !cached(r.ContainerID)
	})
	var runErr error
	if c.runtime != nil && needed {
		if run, runErr = c.listRuntime(ctx); runErr != nil {
			c.log.Error(runErr, "host-local's reservations kept: the runtime cannot be asked")
		}
	}
	if ctx.Err() != nil { // stopping: a runtime's list cut short decides nothing, and the last round's stands
		return
	}
	// Every reservation decided first, and recorded (AddressHandler); then those to free freed, in their order.
	now := time.Now()
	// decideOn asks decideReservation about r on its network's config n (ok: there is one), the runtime's answer run,
	// and the cache and data directories read at the round's start, at the time at; again (right before its DEL),
	// on the cache and r's network's directories read again (e, what recheckedDel read).
	decideOn := func(r Reservation, n hostLocalNet, ok bool, run runtimeView, at time.Time, again *evidence) verdict {
		// A running sandbox the runtime lists without an ID may be any reservation's: every one is listed.
		_, listed := run.byID[r.ContainerID]
		// Its DEL releases every reservation of its container in its network: it is as young as the youngest, those
		// written since the round read them too when it is decided again right before its DEL.
		newest, untouched := rv.released(r, n)
		if again != nil {
			untouched = untouchedNow(r, n) // a link made since, or one removed
		}
		for _, d := range delDirs(r, n) {
			// A data directory the round did not read (one ConfDir names since, or one it could not read): what the
			// DEL would walk there, and remove, is not known.
			if p := filepath.Join(d, r.Network); untouched == "" && (!slices.Contains(rv.read, d) || under(p, rv.blind)) {
				untouched = p + " (not read)"
			}
		}
		cachedNow := cached(r.ContainerID)
		if again != nil {
			if t := releasedNow(r, n); t.After(newest) {
				newest = t
			}
			cachedNow = again.cachedID(r.ContainerID) // an entry of another network written since
		}
		return decideReservation(reservationFacts{ContainerID: r.ContainerID, Config: ok, Never: n.Never || cachedNever[r.Network], Asked: run.asked,
			Listed: listed || len(run.runningNoID) > 0, Cached: cachedNow || c.entryAt(r), Untouched: untouched != "",
			Age: at.Sub(newest), Grace: c.hostLocal.grace})
	}
	var frees []Reservation
	sts := make([]ReservationStatus, 0, min(len(rv.rs), maxReservationsRecorded))
	for i, r := range rv.rs {
		n, ok := rv.config(r)
		vd := decideOn(r, n, ok, run, now, nil)
		writing := v.writingOf(r.Network) // a cache entry of its network cut short
		if f := rv.writing[r.Network]; f != "" {
			writing = "the config " + f + " of ConfDir"
		}
		if writing != "" { // kept by no row until it can be read
			vd = verdict{ID: r.ContainerID, Row: -1}
		}
		if i < maxReservationsRecorded {
			st := ReservationStatus{Network: r.Network, DataDir: r.DataDir, File: r.Path(), ContainerID: r.ContainerID, IfName: r.IfName,
				Reserved: r.Reserved, Decision: decisionOf(vd, now, ports.Reason(reasonOf(vd)), c.hostLocal.dryRun), State: ReservationKept}
			if writing != "" {
				st.Decision.Why = writing + ", of network " + r.Network +
					", is being written: which data directories it names, and whether it says disableGC, cannot be told yet"
			}
			switch {
			case vd.Row == 14 && c.runtime != nil && !needed:
				st.Decision.Why += notAskedWhy
			case vd.Row == 14 && c.runtime != nil && runErr != nil:
				st.Decision.Why += ": the runtime did not answer: " + runErr.Error()
			case vd.Row == 15 && run.byID[r.ContainerID] == nil:
				st.Decision.Why += ": it lists a running sandbox without an ID, which may be this one"
			}
			switch newest, untouched := rv.released(r, n); {
			case vd.Row == 16 && !cached(r.ContainerID):
				st.Decision.Why += ": host-local's DEL of it would remove " + untouched + " too, or may"
			case vd.Row == 17 && newest.After(r.Reserved):
				st.Decision.Why += ": host-local's DEL of it would release too a reservation of its container reserved at " + newest.UTC().Format(time.RFC3339)
			}
			switch {
			case vd.Action == report:
				st.State = ReservationReported
			case vd.Action == free && c.hostLocal.dryRun:
				st.State = ReservationWouldFree
			case vd.Action == free:
				st.State = ReservationToFree
			}
			sts = append(sts, st)
		}
		if vd.Action == free {
			frees = append(frees, r)
		}
	}
	c.addresses.round(read, now, rv.rs, sts, rv.untouched, rv.blindSkips)
	// A dry run goes the real round's way but for the DELs: what it would free is decided again right before it would
	// be DELed, after its turns, and recorded (WouldFree) unless the round stops.
	var would []Reservation
	stopped := false
	defer func() {
		if c.hostLocal.dryRun && !stopped {
			for _, r := range c.hostLocal.wouldFree(would, &rv) {
				c.log.Info(LogMessageReservationWouldFree, "network", r.Network, "ip", r.IP, "containerID", r.ContainerID,
					"ifName", r.IfName, "file", r.Path(), "reason", ReasonNoSandbox)
			}
		}
	}()
	// stale: time has passed since run was read (a turn waited for under the rate, a DEL run): each DEL from then on
	// is decided on the Runtime asked again right before it.
	stale := false
	told := map[string]bool{} // the files told freed with the DEL that released them
	// The networks whose config in ConfDir began being written while the round ran: their reservations are kept by
	// no row, the others' decided as ever.
	writingNow := map[string]error{}
	held := func(r Reservation) bool {
		if fi, err := os.Lstat(r.Path()); err != nil || !fi.Mode().IsRegular() {
			return false // replaced by a link, or anything else: no reservation of host-local's, never touched
		}
		still, _, gone := readReservation(r.DataDir, r.Network, r.IP)
		return !gone && still.ContainerID == r.ContainerID && still.IfName == r.IfName
	}
	// One DEL per network, container and interface, and per round: it releases every reservation of them, all of
	// which it is run for (its group) and told with; one that failed is tried again at the next round.
	done := map[delKey]bool{}
	for i, r := range frees {
		if ctx.Err() != nil { // stopping: a DEL cut short is no failure to count
			stopped = true
			return
		}
		k := delKey{network: r.Network, containerID: r.ContainerID, ifName: r.IfName}
		if done[k] || told[r.Path()] {
			continue
		}
		done[k] = true
		if err := writingNow[r.Network]; err != nil {
			for _, o := range sameDel(frees[i:], k) {
				c.addresses.reservationKept(o, err)
			}
			continue
		}
		// The group: the reservations to free of its container and interface, still held; each takes a turn of the
		// rate, which counts reservations freed, not DELs. One released meanwhile, by its runtime, was so before
		// this DEL: a DEL now would match nothing of it (and host-local would then remove the files that hold its
		// container's ID alone).
		group := stillHeld(c, sameDel(frees[i:], k), held)
		if len(group) == 0 {
			continue
		}
		if l := c.hostLocal.limit; l != nil {
			for range group {
				waited, err := turn(ctx, l)
				if err != nil {
					stopped = true
					return // stopping while it waits for its turn
				}
				stale = stale || waited
			}
			if stale { // released while it waited for its turns
				if group = stillHeld(c, group, held); len(group) == 0 {
					continue
				}
			}
		}
		r := group[0]
		// Decided again right before its DEL, on ConfDir as it is then (disableGC set, the config removed) and, once
		// time has passed since the round's list, on the Runtime asked again (its sandbox listed again); and kept
		// when the DEL would release a reservation the round did not decide to free with it (one of another data
		// directory its network's config names since), for which no turn was taken.
		var list *libcni.NetworkConfigList
		var vd verdict
		var outside string
		var began time.Time
		var delErr error
		released := false
		ran, err := c.recheckedDel(ctx, stale, r.Network, func(e evidence) bool {
			if stale {
				run = e.run // the rest of the round is decided on the newer answer
			}
			n, ok := e.config(r)
			n.Never = n.Never || e.cached[r.Network] // a cached config written since that says disableGC
			vd, list = decideOn(r, n, ok, run, time.Now(), &e), n.List
			// The last look before its DEL: it runs only for those a file still holds, one released meanwhile told so.
			group = stillHeld(c, group, held)
			released = len(group) == 0
			outside = releasedOutside(r, n, group)
			return vd.Action == free && !released && outside == ""
		}, func() error {
			if c.hostLocal.dryRun { // its DEL would release the group: told with it, as a real round's siblings
				would = append(would, group...)
				for _, o := range group[1:] {
					told[o.Path()] = true
				}
				return nil
			}
			began, delErr = c.delReservation(ctx, group, list)
			return nil
		})
		if !ran && released && err == nil {
			continue
		}
		if errors.Is(err, errBeingWritten) {
			c.log.Error(err, "host-local's reservations kept, of this network only (its config is being written); will decide on them again at the next resync", "network", r.Network)
			writingNow[r.Network] = err
			for _, o := range group {
				c.addresses.reservationKept(o, err)
			}
			continue
		}
		if errors.Is(err, errNotRechecked) {
			if ctx.Err() != nil {
				stopped = true
				return
			}
			c.log.Error(err, "host-local's reservations kept; will decide on them again at the next resync")
			for _, kept := range frees[i:] { // this one and those after it: the round ends here
				if !told[kept.Path()] { // one told freed with its sibling's DEL stays so
					c.addresses.reservationKept(kept, err)
				}
			}
			return
		}
		if !ran {
			var why error
			if outside != "" && vd.Action == free {
				why = fmt.Errorf("its DEL would release %s too, which this round did not decide to free: decided at the next round", outside)
			}
			for _, o := range group {
				c.addresses.reservationState(o, ReservationKeptOnRecheck, why)
			}
			continue
		}
		stale = true
		if c.hostLocal.dryRun {
			continue
		}
		c.delDone(group, vd, now, began, delErr, held, told) // told with the DEL that released them, whatever ends the round after
	}
}

// sameDel returns the reservations of rs that the DEL of k releases: those of its network, container and interface.
func sameDel(rs []Reservation, k delKey) []Reservation {
	var out []Reservation
	for _, o := range rs {
		if o.Network == k.network && o.ContainerID == k.containerID && o.IfName == k.ifName {
			out = append(out, o)
		}
	}
	return out
}

// stillHeld returns those of rs whose file still holds them (held), and records each other released meanwhile.
func stillHeld(c *Collector, rs []Reservation, held func(Reservation) bool) []Reservation {
	var out []Reservation
	for _, o := range rs {
		if held(o) {
			out = append(out, o)
		} else {
			c.addresses.reservationState(o, ReservationReleasedMeanwhile, nil)
		}
	}
	return out
}

// releasedOutside returns a file, "" for none, that host-local's DEL of r would release, run with n, its network's
// config as it is now, that is none of group's: a reservation of r's container and interface in a data directory
// (or written since) that the round did not decide to free with it.
func releasedOutside(r Reservation, n hostLocalNet, group []Reservation) string {
	for _, dir := range delDirs(r, n) {
		files, err := os.ReadDir(filepath.Join(dir, r.Network))
		if err != nil {
			continue
		}
		for _, f := range files {
			if net.ParseIP(f.Name()) == nil {
				continue
			}
			still, skip, gone := readReservation(dir, r.Network, f.Name())
			if gone || skip != nil || still.ContainerID != r.ContainerID || still.IfName != r.IfName {
				continue
			}
			if !slices.ContainsFunc(group, func(o Reservation) bool { return o.Path() == still.Path() }) {
				return still.Path()
			}
		}
	}
	return ""
}

// siblingFreed logs and records r freed by the DEL of another reservation
// of its container and interface, of the round decided at now (vd: its own
// verdict).
func (c *Collector) siblingFreed(r Reservation, vd verdict, now time.Time, delErr error) {
	kv := []any{"network", r.Network, "ip", r.IP, "containerID", r.ContainerID,
		"ifName", r.IfName, "file", r.Path(), "reason", ReasonNoSandbox, "by", "the DEL of another of its container's reservations"}
	if delErr != nil {
		kv = append(kv, "delError", delErr.Error())
	}
	c.log.Info(LogMessageReservationFreed, kv...)
	c.reservationFreed(r, vd, now, delErr)
}

// reservationFreed records r freed by a DEL of the round decided at now
// (vd): its state, the address's free, and the Observer's count. delErr is
// the DEL's error when it failed after host-local released r (a plugin
// before it in the chain failed): the page tells it with the state.
func (c *Collector) reservationFreed(r Reservation, vd verdict, now time.Time, delErr error) {
	reason := reasonOf(vd)
	var told error
	if delErr != nil {
		told = fmt.Errorf("cni: the DEL failed after host-local released the reservation (a plugin before host-local in the chain "+
			"failed; nothing names the container to try again): %w", delErr)
	}
	c.addresses.reservationState(r, ReservationFreed, told)
	c.addresses.freedOne([]string{r.IP}, FreedAddress{At: time.Now(), Reservation: true, Network: r.Network, File: r.Path(),
		ContainerID: r.ContainerID, IfName: r.IfName, Decision: decisionOf(vd, now, ports.Reason(reason), false)})
	if c.hostLocal.observer != nil {
		c.hostLocal.observer.ReservationFreed(r.Network, reason)
	}
}

// notAskedWhy adds to the words of row 14, for a reservation decided while
// a Runtime is there, why it was not asked: the round lists it only when a
// reservation needs it.
const notAskedWhy = ": not asked, for no reservation of the round needed it (each is of a sandbox the cache holds, or never freed)"

// cachedIDs returns whether an entry of libcni's cache (v and the entries
// it skipped) names a container ID: by its JSON, or, for an entry that
// cannot be read, by its file name (<network>-<containerID>-<ifName>).
func cachedIDs(v view, skips []skipped) func(id string) bool {
	ids := map[string]bool{}
	var files []string
	for _, a := range v.atts {
		ids[a.ContainerID] = true
	}
	for _, s := range skips {
		if s.ContainerID != "" {
			ids[s.ContainerID] = true
		}
		files = append(files, s.File)
	}
	return func(id string) bool {
		return ids[id] || slices.ContainsFunc(files, func(f string) bool { return strings.Contains(f, "-"+id+"-") })
	}
}

// delReservation frees r as the runtime would have: a DEL of its
// network's current config with its container ID and interface, and no
// network namespace (the spec has DEL succeed without one), so that
// host-local releases it under its own lock. A DEL that succeeds while the
// delReservation runs host-local's DEL of the network, container and interface of group (each of which it
// releases), with list, its network's config read right before; what it released is told by the files, which the
// caller reads. It returns the DEL's error, and when it began.
func (c *Collector) delReservation(ctx context.Context, group []Reservation, list *libcni.NetworkConfigList) (time.Time, error) {
	r := group[0]
	ctx, cancel := context.WithTimeout(ctx, reservationDelTimeout)
	defer cancel()
	rt := &libcni.RuntimeConf{ContainerID: r.ContainerID, IfName: r.IfName}
	// libcni reads the cache entry of that network, container and interface, if any, before its DEL, and no
	// context bounds its read: one that is no regular file (a named pipe) would hold the round for good.
	entry := filepath.Join(c.cache.dir, "results", r.Network+"-"+r.ContainerID+"-"+r.IfName)
	if info, err := os.Lstat(entry); err == nil && !info.Mode().IsRegular() {
		return time.Now(), fmt.Errorf("cni: DEL of network %s, container %s, interface %s not run: libcni's cache entry %s is not a regular file (%s)",
			r.Network, r.ContainerID, r.IfName, entry, info.Mode())
	}
	start := time.Now()
	return start, c.cni.DelNetworkList(ctx, list, rt)
}

// delDone tells what the DEL of group (begun at start, answering delErr) did, by the files: each it released is
// freed (the first logged with the DEL, the others with "by"), each still held a failure, tried again at the next
// round. vd is the verdict of the DEL, decided at now.
func (c *Collector) delDone(group []Reservation, vd verdict, now, start time.Time, delErr error, held func(Reservation) bool, told map[string]bool) {
	reason := reasonOf(vd)
	first := true
	for _, r := range group {
		if held(r) {
			err := fmt.Errorf("cni: DEL of network %s, container %s, interface %s succeeded, and host-local still holds %s",
				r.Network, r.ContainerID, r.IfName, r.Path())
			if delErr != nil {
				err = fmt.Errorf("cni: DEL of network %s, container %s, interface %s (host-local's %s): %w", r.Network, r.ContainerID, r.IfName, r.Path(), delErr)
			}
			c.log.Error(err, "freeing a host-local reservation failed; will try again at the next resync", "freeingRow", vd.Row)
			c.addresses.reservationState(r, ReservationFreeFailed, err)
			if c.hostLocal.observer != nil {
				c.hostLocal.observer.ReservationFreeFailed(r.Network, reason)
			}
			continue
		}
		told[r.Path()] = true
		if !first {
			c.siblingFreed(r, vd, now, delErr)
			continue
		}
		first = false
		kv := []any{"network", r.Network, "ip", r.IP, "containerID", r.ContainerID, "ifName", r.IfName,
			"file", r.Path(), "reason", ReasonNoSandbox, "took", time.Since(start).String()}
		if delErr != nil { // host-local released it (DEL runs the chain in reverse), and a plugin before it failed
			kv = append(kv, "delError", delErr.Error())
		}
		c.log.Info(LogMessageReservationFreed, kv...)
		c.reservationFreed(r, vd, now, delErr)
	}
}

// releasedNow returns the newest of the files that host-local's DEL of r would release, as they are now, in every
// data directory of r's network n (its chain may run host-local more than once) and in r's own: r's file itself, those
// naming its container and interface, and those that hold nothing yet (host-local may be writing one of them); the
// zero time for none.
func releasedNow(r Reservation, n hostLocalNet) (newest time.Time) {
	for _, dir := range delDirs(r, n) {
		files, err := os.ReadDir(filepath.Join(dir, r.Network))
		if err != nil {
			continue
		}
		for _, f := range files {
			if net.ParseIP(f.Name()) == nil {
				continue
			}
			still, skip, gone := readReservation(dir, r.Network, f.Name())
			if !gone && (skip != nil && still.ContainerID == "" || still.ContainerID == r.ContainerID && still.IfName == r.IfName) {
				if still.Reserved.After(newest) {
					newest = still.Reserved
				}
			}
		}
	}
	return newest
}

// entryAt reports whether libcni's cache holds a file where a DEL of r reads and then removes its cache entry
// (<network>-<containerID>-<ifName>), whatever it holds: an entry of r's container written since the round read the
// cache, or another network's whose name and container ID make the same file name (networks "a" and "a-b"): the DEL
// would remove it. It is read at each decision, right before the DEL too (row 16).
func (c *Collector) entryAt(r Reservation) bool {
	_, err := os.Lstat(filepath.Join(c.cache.dir, "results", r.Network+"-"+r.ContainerID+"-"+r.IfName))
	return err == nil
}

// newHostLocal returns the sweep of opts, which New has defaulted.
func newHostLocal(opts Options, log logr.Logger) *hostLocal {
	h := &hostLocal{confDir: opts.ConfDir, defaultDataDir: opts.HostLocalDataDir, grace: opts.ReservationGrace,
		dryRun: opts.DryRun, observer: opts.Observer, skips: newSkipLog(log, LogMessageReservationSkipped)}
	if opts.ReservationRate > 0 && opts.ReservationRate < rate.Inf { // rate.Inf and above (+Inf): no limit
		h.limit = rate.NewLimiter(opts.ReservationRate, max(opts.ReservationBurst, 1))
	}
	return h
}
