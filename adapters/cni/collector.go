package cni

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/podsweeper/podsweeper/internal/pathkind"
	"github.com/podsweeper/podsweeper/ports"
)

// Errors of New, DestroyPU and Resync. Match them with errors.Is.
var (
	// ErrInvalidOptions: an Options field is out of range, or a directory
	// it names does not exist.
	ErrInvalidOptions = errors.New("cni: invalid options")
	// ErrUnusableEntry: a cache entry of the PU cannot be read, or its
	// config would run no plugin. DestroyPU wraps it with ports.Permanent;
	// the entry is left as it is, for an operator to look at. An entry cut
	// short, its cached config too (being written: libcni writes it in
	// place), is kept by no row until it is whole: DestroyPU's error then
	// wraps it, plain, and the engine tries again.
	ErrUnusableEntry = errors.New("cni: unusable cache entry")
	// ErrNewestSandbox: DestroyPU was asked to free a sandbox of a live
	// pod (ports.ReasonSandboxChanged, ports.ReasonSandboxDead) that the
	// runtime lists ready, or that may be one it is creating: no sandbox of
	// the pod is known to be created strictly later (the package doc, "When
	// a sandbox may be freed"). It is kept, and the error is a plain one, so
	// that the engine checks the pod again before trying again.
	ErrNewestSandbox = errors.New("cni: the sandbox is the newest of its pod in the cache")
	// ErrResyncRunning: Resync was called while another Resync runs.
	ErrResyncRunning = errors.New("cni: Resync already running")
)

// Defaults of the Options fields left at their zero value: where
// containerd and CRI-O keep libcni's cache, their plugins and their
// network configs.
const (
	DefaultCacheDir       = "/var/lib/cni"
	DefaultPluginDir      = "/opt/cni/bin"
	DefaultConfDir        = "/etc/cni/net.d"
	DefaultResyncInterval = 30 * time.Second
	// DefaultNewestSandboxTimeout is Options.NewestSandboxTimeout when
	// left at zero: longer than the kubelet's default deadline of a
	// RunPodSandbox, 4 minutes (twice its --runtime-request-timeout of 2
	// minutes), after which no sandbox is still being created. A kubelet
	// given a longer --runtime-request-timeout wants more than twice it.
	DefaultNewestSandboxTimeout = 5 * time.Minute
)

// LogMessageFreed is the message of the line the Collector logs (at info)
// for each attachment a DestroyPU freed: keep it out of a logger's
// sampling (k8s.NewLogger) to find every one in the log.
const LogMessageFreed = "attachment freed"

// LogMessageEntrySkipped is the message of the line the Collector logs (at
// info) once for each cache entry it skips and never deletes (another
// runtime's, or one it cannot read or use): the only record of it, to keep
// out of a logger's sampling too.
const LogMessageEntrySkipped = "skipping a cache entry: it is never deleted"

// Options configure New. The zero value of every field is a documented default.
type Options struct {
	// CacheDir is libcni's cache directory, the runtime's: attachments are
	// read from its results/ subdirectory. It must exist. "":
	// DefaultCacheDir (/var/lib/cni).
	CacheDir string
	// PluginDirs are the directories the plugins' binaries are looked up
	// in, as the runtime's (containerd's bin_dirs, CRI-O's plugin_dirs).
	// Each must exist. nil or empty: []string{DefaultPluginDir}
	// (/opt/cni/bin).
	PluginDirs []string
	// ConfDir is the runtime's network config directory. A network that a
	// config there names with "disableGC": true is never touched, even
	// when the config its attachments were added with (the cached one)
	// did not say so. A directory that does not exist holds no config; a
	// path that is there and no directory (a file, a loop of links, a link
	// to nothing, whose target may hold a config) is invalid. "":
	// DefaultConfDir (/etc/cni/net.d).
	ConfDir string
	// ResyncInterval is how often Resync lists the cache again, to track
	// the attachments that appeared since. 0: DefaultResyncInterval (30s).
	// Negative values are invalid.
	ResyncInterval time.Duration
	// Runtime, when set, is the container runtime (adapters/cri's
	// SandboxExtractor): the sandboxes it lists, ready or stopped, and
	// their CreatedAt, are what tells a sandbox that is dead from one that
	// runs or is being created (the package doc, "When a sandbox may be
	// freed"). nil: only a sandbox whose network namespace is gone is known
	// to be dead, and freed; a gone pod's others are kept (ErrNoEvidence).
	// A typed nil (a *T left nil) is nil, as ports.IsNil says.
	// Each list of its sandboxes is given 10s, or ResyncInterval if
	// shorter: one that fails or takes longer keeps everything (a plain
	// error, never permanent, whatever it says) and is asked again.
	Runtime Runtime
	// NewestSandboxTimeout is how long DestroyPU refuses to free a sandbox
	// that may be one the runtime is creating, timed from the first
	// refusal since its place was last known: then a sandbox of a live pod
	// is given up (ErrOrderUnknown), and one of a gone pod freed with it
	// (the package doc, "When a sandbox may be freed").
	// 0: DefaultNewestSandboxTimeout (5m). Negative values are invalid.
	NewestSandboxTimeout time.Duration
	// HostLocalDataDir is where host-local keeps its reservations for a
	// network of ConfDir whose config sets no "dataDir" (the package doc,
	// "host-local's reservations"). A directory that does not exist holds
	// none; a path that is there and no directory (a file, a loop of
	// links, a link to nothing) is invalid. "" alone (not ".", the working
	// directory): DefaultHostLocalDataDir (/var/lib/cni/networks).
	HostLocalDataDir string
	// ReservationGrace is how old a host-local reservation that no sandbox
	// of the Runtime or cache entry accounts for must be before Resync
	// frees it (its file's modification time): longer than any sandbox is
	// created. 0: DefaultReservationGrace (5m). Negative values are
	// invalid.
	ReservationGrace time.Duration
	// ReservationRate is at most how many host-local reservations Resync
	// frees a second, whatever goes wrong upstream (a Runtime that lists no
	// sandbox of a node full of them, say): the rest wait for their turn, in
	// their round, in the order of their files (a DEL that releases several
	// reservations of one container waits a turn for each). ReservationBurst is how
	// many turns may be taken at once under it. Host-local's DEL releases
	// every reservation of a container and interface together: one that
	// holds more than ReservationBurst waits a turn for each, then frees
	// them at once, so the rate's bound over a second holds while a single
	// DEL may free more than the burst. A ReservationRate of 0, or of
	// rate.Inf or above (+Inf), sets no limit; a ReservationBurst of 0 under
	// a limit is a burst of 1. Negative values, and a ReservationRate that
	// is no number (NaN), are invalid. cni-gc sets them to the engine's
	// rate (--max-destroys-per-second, --destroy-burst).
	ReservationRate  rate.Limit
	ReservationBurst int
	// DryRun, when set, has Resync free no host-local reservation: each it
	// would free is logged, told to Observer, and listed by WouldFree. Its
	// rounds go as a real round does, the rate's turns waited for and each
	// reservation decided again right before its DEL would run. It
	// also has Resync track a PU it listed the time before, with the same
	// sandbox, no more (a dry run's engine drops a gone pod's PU once it
	// reported it: tracked at each list, it would be reported at each),
	// unless its pod was requeued (a PU the engine's Inventory listed
	// between two lists of Resync and the engine dropped before the second
	// is tracked once more, and may be reported once more: see Resync).
	// DestroyPU is the engine's to leave uncalled (deletion.Options.DryRun),
	// which asks DryRunDestroyPU instead.
	DryRun bool
	// Observer, when set, hears of the host-local reservations freed,
	// failed, reported, or that a dry run would free (adapters/k8s's
	// ReservationMetrics). nil (or a typed nil, ports.IsNil): none.
	Observer Observer
	// Logger receives the cache entries skipped (once each) and the DELs
	// run. A Logger without a sink (the zero value) logs through klog
	// (klog.Background()), as the engine does.
	Logger logr.Logger
}

// Collector frees the network attachments that CNI plugins keep for pods
// that are gone, by calling the plugins' own DEL as the runtime would have.
// It is the engine's Inventory (ListPUs), its PolicyHandler (DestroyPU)
// and DryRunner (DryRunDestroyPU), its Requeuer (Requeue) and its
// SandboxProber (SandboxDead); Resync feeds
// the engine while it runs. Build it with New; its methods are safe from
// any goroutine.
//
// It asks decide what may be freed, and composes one small type per
// piece of state: the cache's reader, the refusals, the resync loop, the
// log of skipped entries, and the sweep of host-local's reservations.
type Collector struct {
	cache    cacheReader
	runtime  Runtime
	refusals *refusals
	resync   *resyncer
	// hostLocal frees host-local's reservations the cache does not hold.
	hostLocal *hostLocal
	// addresses are the decisions and frees AddressHandler tells.
	addresses *addressLog
	// cni runs the plugins' DEL, one DestroyPU of a pod at a time.
	cni *plugins
	log logr.Logger
}

var (
	_ ports.Inventory     = (*Collector)(nil)
	_ ports.PolicyHandler = (*Collector)(nil)
	_ ports.Requeuer      = (*Collector)(nil)
	_ ports.SandboxProber = (*Collector)(nil)
	_ ports.DryRunner     = (*Collector)(nil)
)

// New returns a Collector of the attachments in opts.CacheDir. It fails
// with ErrInvalidOptions when an option is out of range, when CacheDir or
// a plugin directory does not exist (a DaemonSet that forgot to mount one
// would otherwise see no attachment, or fail every DEL), or when ConfDir
// or HostLocalDataDir is there and is not a directory (a file, a loop of
// links, a link to nothing: every read of it would fail).
func New(opts Options) (*Collector, error) {
	if opts.ResyncInterval < 0 {
		return nil, fmt.Errorf("%w: ResyncInterval is negative (%v)", ErrInvalidOptions, opts.ResyncInterval)
	}
	if opts.NewestSandboxTimeout < 0 {
		return nil, fmt.Errorf("%w: NewestSandboxTimeout is negative (%v)", ErrInvalidOptions, opts.NewestSandboxTimeout)
	}
	if opts.ReservationGrace < 0 {
		return nil, fmt.Errorf("%w: ReservationGrace is negative (%v)", ErrInvalidOptions, opts.ReservationGrace)
	}
	if opts.ReservationRate < 0 || opts.ReservationBurst < 0 {
		return nil, fmt.Errorf("%w: ReservationRate (%v) or ReservationBurst (%d) is negative", ErrInvalidOptions, opts.ReservationRate, opts.ReservationBurst)
	}
	if math.IsNaN(float64(opts.ReservationRate)) { // no number: it bounds nothing, and would be taken as no limit
		return nil, fmt.Errorf("%w: ReservationRate is not a number", ErrInvalidOptions)
	}
	if opts.ReservationGrace == 0 {
		opts.ReservationGrace = DefaultReservationGrace
	}
	if opts.HostLocalDataDir == "" { // "" alone: "." (and "./") name the working directory
		opts.HostLocalDataDir = DefaultHostLocalDataDir
	}
	opts.HostLocalDataDir = filepath.Clean(opts.HostLocalDataDir) // as the configs' own are, so that they compare
	if opts.NewestSandboxTimeout == 0 {
		opts.NewestSandboxTimeout = DefaultNewestSandboxTimeout
	}
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir
	}
	if len(opts.PluginDirs) == 0 {
		opts.PluginDirs = []string{DefaultPluginDir}
	}
	if opts.ConfDir == "" {
		opts.ConfDir = DefaultConfDir
	}
	if opts.ResyncInterval == 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = klog.Background().WithName("cni")
	}
	// A port given as a typed nil (a *T left nil) is one not given, as ports.IsNil says: calling it would panic.
	if ports.IsNil(opts.Runtime) {
		opts.Runtime = nil
	}
	if ports.IsNil(opts.Observer) {
		opts.Observer = nil
	}
	for i, d := range append([]string{opts.CacheDir}, opts.PluginDirs...) {
		what := "the cache directory"
		if i > 0 {
			what = "a plugin directory"
		}
		if d == "" {
			return nil, fmt.Errorf("%w: %s is empty", ErrInvalidOptions, what)
		}
		switch kind, _, err := pathkind.Of(d); kind {
		case pathkind.Dir:
		case pathkind.Missing, pathkind.Dangling, pathkind.Loop, pathkind.Unreadable:
			return nil, fmt.Errorf("%w: %s %s (it is not created: mount it from the node): %w", ErrInvalidOptions, what, d, err)
		default:
			return nil, fmt.Errorf("%w: %s %s is not a directory", ErrInvalidOptions, what, d)
		}
	}
	// A config or data directory that does not exist holds none; one that is there and not a directory (a file, a
	// loop of links, a link to nothing) fails every read. A link to nothing is not one that does not exist: its
	// target (a directory the pod does not mount) may hold a config that says disableGC.
	for _, d := range [...]struct{ what, dir string }{{"the config directory", opts.ConfDir}, {"host-local's data directory", opts.HostLocalDataDir}} {
		switch kind, _, err := pathkind.Of(d.dir); kind {
		case pathkind.Dir, pathkind.Missing:
		case pathkind.Dangling:
			return nil, fmt.Errorf("%w: %s %s is a link to nothing (mount its target from the node): %w", ErrInvalidOptions, d.what, d.dir, err)
		case pathkind.Loop, pathkind.Unreadable:
			return nil, fmt.Errorf("%w: %s %s cannot be read: %w", ErrInvalidOptions, d.what, d.dir, err)
		default:
			return nil, fmt.Errorf("%w: %s %s is not a directory", ErrInvalidOptions, d.what, d.dir)
		}
	}
	return &Collector{
		cache:     cacheReader{dir: opts.CacheDir, confDir: opts.ConfDir, skips: newSkipLog(opts.Logger, LogMessageEntrySkipped)},
		runtime:   opts.Runtime,
		refusals:  newRefusals(opts.NewestSandboxTimeout),
		resync:    newResyncer(opts.ResyncInterval, opts.Logger, opts.DryRun),
		hostLocal: newHostLocal(opts, opts.Logger),
		addresses: newAddressLog(),
		// The cache directory goes to the CNIConfig: libcni ignores
		// RuntimeConf.CacheDir in some of its paths.
		cni: &plugins{CNIConfig: libcni.NewCNIConfigWithCacheDir(slices.Clone(opts.PluginDirs), opts.CacheDir, newPluginExec(opts.Logger)),
			pods: podLocks{held: map[string]chan struct{}{}}},
		log: opts.Logger,
	}, nil
}

// read reads the cache and the config directory, forgets the refusals of
// the sandboxes it no longer holds, and logs once each entry it skips (one
// of a network whose config is being written is neither logged again nor
// forgotten). On
// a confDirError, the view is the cache's (cacheReader.read), and nothing
// is forgotten or logged.
func (c *Collector) read() (view, error) {
	v, skips, err := c.cache.read()
	if err != nil {
		return v, err
	}
	held := make(map[string]bool, len(v.atts))
	unsure := map[string]bool{}  // the entries of a network whose config is being written: whether they are skipped cannot be told
	for _, u := range v.unused { // a sandbox an entry not used names may be refused (row 9): its time is kept
		held[u.ContainerID] = true
	}
	for _, a := range v.atts {
		held[a.ContainerID] = true
		unsure[a.File] = v.writing[a.NetworkName] != ""
		if v.collectable(a) && c.refusals.givenUp(a.ContainerID) {
			skips = append(skips, skipped{File: a.File, Written: a.Written,
				Why: "its sandbox's place among the pod's sandboxes cannot be told (" + ErrOrderUnknown.Error() + "): kept until the collector restarts or the pod is gone"})
		}
	}
	// A sandbox whose entry could not be read whole (cut short while libcni writes it in place, unreadable) is
	// neither there nor gone: what the Collector knows of it is kept.
	var unread []string
	for _, s := range skips {
		if s.Unreadable || len(s.Unsure) > 0 {
			unread = append(unread, filepath.Base(s.File))
		}
	}
	kept := func(id string) bool {
		return held[id] || slices.ContainsFunc(unread, func(f string) bool { return strings.Contains(f, "-"+id+"-") })
	}
	c.refusals.retain(kept)
	c.addresses.retain(kept)
	c.cache.skips.report(skips, func(f string) bool { return unsure[f] })
	return v, nil
}

// ListPUs lists the pods that hold collectable attachments in the cache,
// one PU per pod UID: its namespace and name from the attachments'
// CNI_ARGS, and its oldest sandbox in the cache, in the order the package
// doc's "When a sandbox may be freed" gives (and why the oldest: "One PU
// per pod, its oldest sandbox first"). Of a pod's dead sandboxes, one a
// DEL of DestroyPU failed on comes after the others, so that one that
// cannot be freed holds none of them. A sandbox DestroyPU gave up on
// (ErrOrderUnknown) is passed over; a pod left with no other sandbox is
// listed without one, so that the engine records its current sandbox
// (row 7) and frees everything once the pod is gone. Entries without the
// pod's arguments, unreadable, unusable for a DEL or of a disableGC
// network are skipped, logged once; so are, for that list, the entries of
// a network one of whose entries or whose config is being written
// (whether it says disableGC cannot be told yet). A Runtime that cannot be asked makes
// the order the cache's, logged.
func (c *Collector) ListPUs(ctx context.Context) ([]ports.PU, error) {
	l, err := c.list(ctx)
	if err == nil {
		c.resync.inventoryListed(l)
	}
	return l.pus, err
}

// list is ListPUs, and tells what Resync needs too (listing).
func (c *Collector) list(ctx context.Context) (listing, error) {
	if err := ctx.Err(); err != nil {
		return listing{}, err
	}
	v, err := c.read()
	if err != nil {
		return listing{}, err
	}
	rv, err := c.listRuntime(ctx)
	if err != nil {
		c.log.Error(err, "ordering the sandboxes by the cache's times")
	}
	told := err == nil
	// Each pod that holds a collectable attachment, decided on all its attachments, as DestroyPU decides: a
	// disableGC network's namespace tells of the sandbox too.
	byUID := map[string][]attachment{}
	for _, a := range v.atts {
		byUID[a.PodUID] = append(byUID[a.PodUID], a)
	}
	// held: every sandbox the cache holds an entry of, used or not, collectable or not (Resync moves a PU off it).
	oldest, held := map[string]choice{}, make(map[string]bool, len(v.atts)+len(v.unused))
	for _, a := range v.atts {
		held[a.ContainerID] = true
	}
	for _, u := range v.unused {
		held[u.ContainerID] = true
	}
	for uid, atts := range byUID {
		p, sbs := observe(atts, v, v.collectable, rv, uid, true, c.refusals.expired)
		verdicts := decide(p)
		c.refusals.settle(verdicts)
		runs := slices.ContainsFunc(verdicts, func(v verdict) bool { return v.State == stateReady })
		for i, sb := range sbs {
			if !slices.ContainsFunc(sb.Atts, v.collectable) {
				continue // nothing of it is ever freed: another pod's attachments of its container are that pod's
			}
			o, ok := oldest[uid]
			if c.refusals.givenUp(sb.ID) {
				if !ok {
					oldest[uid] = choice{a: sb.Atts[0], none: true}
				}
				continue
			}
			x := choice{a: sb.Atts[0], created: sb.Created, rank: verdicts[i].State, failing: c.refusals.isFailing(sb.ID), runs: runs}
			if !ok || o.none || x.before(o) {
				oldest[uid] = x
			}
		}
	}
	pus := make([]ports.PU, 0, len(oldest))
	var dead map[string]bool
	for uid, o := range oldest {
		pu := ports.PU{PUID: uid, Pod: types.NamespacedName{Namespace: o.a.PodNamespace, Name: o.a.PodName}, SandboxID: o.a.ContainerID}
		if o.none {
			pu.SandboxID = ""
		} else if o.rank == stateDead {
			if dead == nil {
				dead = map[string]bool{}
			}
			dead[uid] = true
		}
		pus = append(pus, pu)
	}
	slices.SortFunc(pus, func(x, y ports.PU) int { return strings.Compare(x.PUID, y.PUID) })
	// The pods with an attachment of a network whose entry or config is being written: this list cannot tell
	// whether they left the cache, nor, of one listed, whether a whole read would list it with that sandbox.
	var unsure map[string]types.NamespacedName
	for _, a := range v.atts {
		if v.writing[a.NetworkName] != "" && !a.List.DisableGC && !pluginSaysDisableGC(a) {
			if unsure == nil {
				unsure = map[string]types.NamespacedName{}
			}
			unsure[a.PodUID] = types.NamespacedName{Namespace: a.PodNamespace, Name: a.PodName}
		}
	}
	var unread []string
	writing := false
	for _, s := range v.unusable {
		unread = append(unread, filepath.Base(s.File))
		writing = writing || len(s.Unsure) > 0
	}
	return listing{pus: pus, held: held, dead: dead, told: told, unsure: unsure, unread: unread, writing: writing}, nil
}

// choice is a sandbox ListPUs may give a pod's PU.
type choice struct {
	a       attachment
	created time.Time
	rank    sandboxState // what decide tells of it
	failing bool         // a DEL of it failed (refusals.isFailing)
	// runs: the pod runs in a sandbox the Runtime lists ready, so that each of its others may go (as changed); else
	// only a dead one may (SandboxDead).
	runs bool

	none bool // the pod has only sandboxes given up on
}

// before reports whether x comes before y in ListPUs' order: a sandbox a DEL failed on after the pod's others that
// may go (all but its ready one while the pod runs in one; its dead ones while it runs in none), so that it holds
// none of them, and before those that may not, so that it is tried again; then by what decide tells (dead, unknown,
// being created, ready), oldest first.
func (x choice) before(y choice) bool {
	if x.failing != y.failing && x.rank != stateReady && y.rank != stateReady {
		other := y // the one no DEL failed on
		if y.failing {
			other = x
		}
		if other.runs || other.rank == stateDead {
			return !x.failing
		}
	}
	if x.rank != y.rank {
		return x.rank < y.rank
	}
	if !x.created.Equal(y.created) {
		return x.created.Before(y.created)
	}
	return x.a.ContainerID < y.a.ContainerID
}

// SandboxDead reports whether the sandbox of that ID, one of pod's, is dead
// as the package doc's "When a sandbox may be freed" says (decide's
// stateDead): Options.Runtime lists it stopped, or does not list it, or
// there is none, and its network namespace is gone; or Options.Runtime
// does not list it and the cache holds nothing of it any more (no entry,
// read or not): nothing of it is left to free. It is the engine's
// ports.SandboxProber, so that the attachments of a dead sandbox are freed
// while its pod waits for a new one: after the node lost its runtime's
// state, the new sandbox's ADD may be failing for want of the very
// addresses the dead one holds. An error means the runtime or the cache
// could not be read; a ConfDir that cannot be read is none (a config
// there tells nothing of whether a sandbox is dead).
func (c *Collector) SandboxDead(ctx context.Context, pod *corev1.Pod, sandboxID string) (bool, error) {
	switch {
	case pod == nil || pod.UID == "" || sandboxID == "":
		return false, fmt.Errorf("cni: SandboxDead needs a pod with a UID and a sandbox ID (pod %v, sandbox %q)", pod != nil, sandboxID)
	}
	rv, err := c.listRuntime(ctx)
	if err != nil {
		return false, err
	}
	// Whether a sandbox is dead is the Runtime's and its network namespaces' to tell, not ConfDir's: a ConfDir
	// that cannot be read (confDirError) leaves the cache's view, which tells it all the same.
	v, err := c.read()
	if cerr := (confDirError{}); err != nil && !errors.As(err, &cerr) {
		return false, err
	}
	if sb, ok := rv.byID[sandboxID]; ok && podUIDOf(sb) == "" {
		// Listed by its ID without a pod: the runtime tells of that ID whatever its labels say (listRuntime), and
		// the engine asks of it as one of pod's.
		byID := maps.Clone(rv.byID)
		byID[sandboxID] = merged(sb, &runtimeapi.PodSandbox{Id: sandboxID, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
			Labels: map[string]string{podUIDLabel: string(pod.UID)}})
		rv.byID = byID
	}
	p, _ := observe(v.atts, v, v.collectable, rv, string(pod.UID), true, c.refusals.expired)
	vs := decide(p)
	c.refusals.settle(vs) // a place it learned (ready, or dead) times the next refusal anew
	for _, verdict := range vs {
		if verdict.ID == sandboxID {
			return verdict.State == stateDead, nil
		}
	}
	// Of none of the pod's sandboxes the cache holds: gone, if the Runtime was asked and lists it not, and the cache
	// holds nothing of that ID either (no entry, used or not, read or not): nothing of it is left to free, and the
	// pod's PU moves on to its next sandbox (its destroy frees nothing, and Resync lists the next).
	_, listed := rv.byID[sandboxID]
	held := func(sk skipped) bool {
		return sk.ContainerID == sandboxID || strings.Contains(filepath.Base(sk.File), "-"+sandboxID+"-")
	}
	return rv.asked && !listed && !slices.ContainsFunc(v.atts, func(a attachment) bool { return a.ContainerID == sandboxID }) &&
		!slices.ContainsFunc(v.unused, held) && !slices.ContainsFunc(v.unusable, held), nil
}

// DestroyPU DELs, with the cached config and arguments as the runtime
// would, the attachments that ev frees, read from the cache now: for
// ports.ReasonSandboxChanged and ports.ReasonSandboxDead (the pod lives
// on) those of ev.SandboxID only; for any other reason (the pod is gone,
// recreated under its name, bound to another node, or finished) those of
// every sandbox of the pod UID. Of those, it frees what the package doc's
// "When a sandbox may be freed" allows (decide's table), and keeps the
// rest with an error that says why: ErrNewestSandbox, ErrOrderUnknown
// (ports.Permanent: the sandbox is left alone from then on, and ListPUs
// passes it over), ErrSandboxRunning (nothing of the pod is freed), or
// ErrNoEvidence (the others are). A Runtime that cannot be asked keeps
// everything (a plain error).
// Attachments of disableGC networks are never DELed: each DEL is decided
// again on ConfDir read right before it (a disableGC set while another DEL
// of the pod ran keeps the attachment; a ConfDir that cannot be read then
// keeps it with a plain error). An attachment gone
// already (the runtime's DEL came first, or a previous call) is nothing to
// do, so DestroyPU is idempotent; two calls for one pod at once free it
// once, the second after the first. A DEL that fails keeps its entry and
// makes a plain error, for the engine to retry with backoff; the other
// attachments are DELed meanwhile. An entry of the PU that cannot be read
// or would run no plugin makes an error wrapping ErrUnusableEntry, marked
// ports.Permanent once every other attachment is freed; but one being
// written (cut short, its cached config too) makes it plain: the engine
// tries again, and frees it once whole.
func (c *Collector) DestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	if ev.PUID == "" {
		return ports.Permanent(errors.New("cni: DestroyPU of a PU without a PUID"))
	}
	defer c.resync.ended(ev.PUID)
	// A second DestroyPU of the pod (a check of a PU tracked anew while the last one's destroy still runs) waits
	// for the first, then reads the cache anew: what the first freed is gone from it.
	unlock, err := c.cni.pods.lock(ctx, ev.PUID)
	if err != nil {
		return fmt.Errorf("cni: pod %s (uid %s) kept: waiting for its destroy under way: %w", ev.Pod, ev.PUID, err)
	}
	defer unlock()
	p, err := c.planRead(ctx, ev, false, c.read)
	if err != nil {
		return err
	}
	c.refusals.settle(p.all) // the places it learned (ready, or dead), whichever sandbox ev names
	c.refusals.record(p.record)
	c.refusals.record(p.others)
	decided := time.Now()
	c.addresses.decided(p.recordedSandboxes(), p.record, decided, ev, false)
	if p.answer != nil {
		return p.answer
	}
	var expired []string
	for _, vd := range p.verdicts {
		if vd.Row == 10 {
			expired = append(expired, vd.ID)
		}
	}
	if len(expired) > 0 {
		c.log.Info("sandboxes the runtime has not listed for NewestSandboxTimeout are not ones it is creating; freed with their pod",
			"puID", ev.PUID, "pod", ev.Pod.String(), "sandboxes", strings.Join(expired, ", "))
	}
	failed := c.keepWriting(p, ev, false)
	var unusable []error
	freed := 0
	for i, sb := range p.sbs {
		for j, a := range sb.Atts {
			if !p.verdicts[i].Del[j] {
				continue
			}
			// Decided again on ConfDir as it is right before the DEL: a disableGC set while another DEL ran keeps it.
			ran, err := c.recheckedDel(ctx, false, a.NetworkName, func(e evidence) bool { return p.stillDels(e, i, j) },
				func() error { return c.del(ctx, a, ev) })
			if err == nil && !ran {
				c.log.Info("attachment kept: its network's config in ConfDir says disableGC now", "network", a.NetworkName,
					"sandboxID", a.ContainerID, "ifName", a.IfName, "pod", ev.Pod.String(), "puID", ev.PUID)
				c.addresses.recheckKept(a, "network "+a.NetworkName+"'s config in ConfDir says disableGC now")
				continue
			}
			if errors.Is(err, errNotRechecked) {
				// Kept by no row, for what the DEL is decided on could not be read again: the address page tells it.
				c.addresses.attUndecided(a, time.Now(), ev, false, err)
				failed = append(failed, fmt.Errorf("network %s, sandbox %s, interface %s: %w", a.NetworkName, a.ContainerID, a.IfName, err))
				continue
			} else if errors.Is(err, errFreedMeanwhile) {
				continue
			} else if errors.Is(err, ErrUnusableEntry) {
				unusable = append(unusable, err)
				continue
			} else if err != nil {
				failed = append(failed, err)
				c.refusals.delFailed(a.ContainerID)
				continue
			}
			freed++
			c.addresses.freedOne(resultIPs(a.Result), FreedAddress{At: time.Now(), Network: a.NetworkName, ContainerID: a.ContainerID,
				IfName: a.IfName, PodNamespace: a.PodNamespace, PodName: a.PodName, PodUID: a.PodUID,
				Decision: decisionOf(p.verdicts[i], decided, ev.Reason, false)})
		}
	}
	if err := p.result(failed, append(unusable, p.unusable...)); err != nil {
		return err
	}
	if freed == 0 {
		c.log.V(1).Info("nothing cached to free", "puID", ev.PUID, "pod", ev.Pod.String(), "sandboxID", ev.SandboxID, "reason", string(ev.Reason))
	}
	return nil
}

// DryRunDestroyPU answers as DestroyPU(ev) would, through the same
// decision (decide), and frees nothing: it runs no DEL and waits for no
// DestroyPU of the pod under way. It records its refusals as DestroyPU
// does, so that its answers follow DestroyPU's in time: a sandbox refused
// for NewestSandboxTimeout is given up, and its gone pod answered nil, as
// DestroyPU would free it then. nil: DestroyPU would free what ev names (or
// find nothing to free); otherwise DestroyPU's error: ErrSandboxRunning,
// ErrNewestSandbox, ErrOrderUnknown, ErrNoEvidence, or ErrUnusableEntry
// for an entry whose DEL could not run.
// A DEL that would fail cannot be told without running it, and is not;
// but under an ended ctx every DEL would fail, and the answer says so
// (wrapping ctx's error) beside what DestroyPU keeps, as DestroyPU's does.
// An ended ctx asks the Runtime nothing, in DestroyPU too. It
// is the engine's ports.DryRunner, asked in a dry run
// (deletion.Options.DryRun) where it would call DestroyPU.
func (c *Collector) DryRunDestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	if ev.PUID == "" {
		return ports.Permanent(errors.New("cni: DestroyPU of a PU without a PUID"))
	}
	// An ended ctx keeps the pod where DestroyPU's would (planRead's list of the Runtime, each DEL); a PU the cache
	// holds nothing of is nothing to do, as there.
	// Read as DestroyPU reads: the refusals of the sandboxes the cache no longer holds are forgotten, as there.
	p, err := c.planRead(ctx, ev, true, c.read)
	if err != nil {
		return err
	}
	c.refusals.settle(p.all)
	c.refusals.record(p.record)
	c.refusals.record(p.others)
	c.addresses.decided(p.recordedSandboxes(), p.record, time.Now(), ev, true)
	if p.answer != nil {
		return p.answer
	}
	kept := c.keepWriting(p, ev, true)
	var unusable []error
	for i, sb := range p.sbs {
		for j, a := range sb.Atts {
			if !p.verdicts[i].Del[j] {
				continue
			}
			if _, err := c.delCheck(a); err != nil {
				if !errors.Is(err, errFreedMeanwhile) {
					unusable = append(unusable, err)
				}
				continue
			}
			if err := ctx.Err(); err != nil { // DestroyPU's DEL would fail, beside what it keeps
				kept = append(kept, fmt.Errorf("cni: DEL of network %s, sandbox %s, interface %s: %w", a.NetworkName, a.ContainerID, a.IfName, err))
			}
		}
	}
	return p.result(kept, append(unusable, p.unusable...))
}

// planRead reads the cache with read and lists the Runtime (unless the
// cache holds nothing of ev's pod), then decides what DestroyPU(ev) does
// (plan); a failed read or list keeps the pod, and a ConfDir or a Runtime
// that could not be read keeps its sandboxes in the cache by no row
// (addressLog.undecided).
func (c *Collector) planRead(ctx context.Context, ev ports.DestroyEvent, dryRun bool, read func() (view, error)) (destroyPlan, error) {
	v, err := read()
	if cerr := (confDirError{}); errors.As(err, &cerr) && v.holdsNothingOf(ev) {
		err = nil // a PU the cache holds nothing of: nothing to keep, whatever ConfDir says
	} else if errors.As(err, &cerr) {
		// Asked, and kept by no row: the address page tells it, and why.
		c.addresses.undecided(v.sandboxesOf(ev), time.Now(), ev, dryRun, fmt.Errorf("ConfDir could not be read: %w", cerr))
	}
	if err != nil {
		return destroyPlan{}, err
	}
	var rv runtimeView
	if !v.holdsNothingOf(ev) { // else a PU it does not know: the runtime has nothing to tell of what is to free
		if rv, err = c.listRuntime(ctx); err != nil {
			// Asked, and kept by no row: the address page tells it, and why.
			c.addresses.undecided(v.sandboxesOf(ev), time.Now(), ev, dryRun, fmt.Errorf("the runtime could not be asked: %w", err))
			return destroyPlan{}, fmt.Errorf("%w: pod %s (uid %s) kept", err, ev.Pod, ev.PUID)
		}
	}
	// A network whose config is being written is decided on as one that does not say disableGC: an attachment that
	// would then be DELed there is kept by no row until the config can be read (keepWriting).
	writing := v.writing
	v.writing = nil
	p := c.plan(v, rv, ev)
	p.writing = writing
	return p, nil
}

// keepWriting keeps, by no row, each attachment p would DEL of a network
// whose config in ConfDir is being written, and says why: on the address
// page, and in the errors it returns, which DestroyPU answers with (a
// plain error: the engine tries again). The other networks' attachments
// are decided as ever.
func (c *Collector) keepWriting(p destroyPlan, ev ports.DestroyEvent, dryRun bool) (kept []error) {
	for i, sb := range p.sbs {
		for j, a := range sb.Atts {
			if f := p.writing[a.NetworkName]; f != "" && p.verdicts[i].Del[j] {
				err := fmt.Errorf("cni: pod %s (uid %s), network %s, sandbox %s, interface %s: kept: %s, of network %s, is being written, and whether it says disableGC cannot be told yet",
					ev.Pod, ev.PUID, a.NetworkName, a.ContainerID, a.IfName, f, a.NetworkName)
				p.verdicts[i].Del[j] = false
				c.addresses.attUndecided(a, time.Now(), ev, dryRun, err)
				kept = append(kept, err)
			}
		}
	}
	return kept
}

// sandboxesOf returns the IDs of the sandboxes of the cache v whose
// attachments DestroyPU(ev) would decide on.
func (v view) sandboxesOf(ev ports.DestroyEvent) []string {
	changed := ev.Reason == ports.ReasonSandboxChanged || ev.Reason == ports.ReasonSandboxDead
	var ids []string
	for _, a := range v.atts {
		if a.PodUID == ev.PUID && (!changed || a.ContainerID == ev.SandboxID) && !slices.Contains(ids, a.ContainerID) {
			ids = append(ids, a.ContainerID)
		}
	}
	return ids
}

// holdsNothingOf reports whether the cache v holds nothing DestroyPU(ev)
// could free: no attachment of ev's pod (of its sandbox, for a sandbox
// change), and no unusable entry that is, or may be, one of them (one
// whose container cannot be read may be any pod's).
func (v view) holdsNothingOf(ev ports.DestroyEvent) bool {
	changed := ev.Reason == ports.ReasonSandboxChanged || ev.Reason == ports.ReasonSandboxDead
	if slices.ContainsFunc(v.atts, func(a attachment) bool {
		return a.PodUID == ev.PUID && (!changed || a.ContainerID == ev.SandboxID)
	}) {
		return false
	}
	// An entry it cannot use may be of that sandbox (of that pod, or named by nothing it could read): for a sandbox
	// change, one of another sandbox of the pod is not the event's, as DestroyPU's DELs are not.
	return !slices.ContainsFunc(v.unusable, func(s skipped) bool {
		ofPod := s.PodUID == ev.PUID && (!changed || s.ContainerID == ev.SandboxID || s.ContainerID == "")
		return ofPod || s.PodUID == "" && s.ContainerID == "" ||
			ev.SandboxID != "" && strings.Contains(s.File, "-"+ev.SandboxID+"-")
	})
}

// destroyPlan is what DestroyPU(ev) does, decided (decide) on one read of
// the cache and the Runtime, before any DEL: DestroyPU carries it out,
// DryRunDestroyPU only answers it.
type destroyPlan struct {
	// sbs are the sandboxes whose attachments verdicts (index for index)
	// tell to DEL.
	sbs      []sandbox
	verdicts []verdict
	// all are the verdicts on every sandbox of the pod, and record those
	// that answer the event (refusals.record); others, of a gone pod, are
	// those of its sandboxes the cache holds no attachment of (listed by the
	// runtime, or named by an entry not used): their refusals are timed
	// too, so that one the runtime may be creating expires (row 10).
	all, record, others []verdict
	// answer, when set, is DestroyPU's answer, before any DEL: everything
	// is kept.
	answer error
	// kept are the sandboxes kept beside those freed (ErrNoEvidence).
	kept error
	// unusable are the entries of the PU that cannot be read or used; cut,
	// those being written (cut short, their cached config too), which a
	// later DestroyPU may read.
	unusable, cut []error
	// facts are what all was decided on; cached are the pod's sandboxes
	// in the cache, the first of facts.Sandboxes index for index, and sbs
	// are cached[at:at+len(sbs)] (stillDels).
	facts  podFacts
	cached []sandbox
	at     int
	// writing are the networks whose config in ConfDir is being written,
	// each with its file (keepWriting).
	writing map[string]string
}

// plan decides what DestroyPU(ev) does with what v and rv tell, and
// changes nothing.
func (c *Collector) plan(v view, rv runtimeView, ev ports.DestroyEvent) destroyPlan {
	changed := ev.Reason == ports.ReasonSandboxChanged || ev.Reason == ports.ReasonSandboxDead
	f, sbs := observe(v.atts, v, v.collectable, rv, ev.PUID, changed, c.refusals.expired)
	all := decide(f) // the cached sandboxes' verdicts first, then those of the sandboxes the runtime alone lists
	p := destroyPlan{sbs: sbs, verdicts: all[:len(sbs)], all: all, facts: f, cached: sbs}
	if changed {
		// Given up on, and still held: left as it is until the Collector is made anew, or its pod is gone.
		if c.refusals.givenUp(ev.SandboxID) && slices.ContainsFunc(v.atts, func(a attachment) bool { return a.ContainerID == ev.SandboxID }) {
			p.answer = ports.Permanent(fmt.Errorf("%w: pod %s (uid %s), sandbox %s: given up on already", ErrOrderUnknown, ev.Pod, ev.PUID, ev.SandboxID))
			return p
		}
		i := slices.IndexFunc(sbs, func(s sandbox) bool { return s.ID == ev.SandboxID })
		if i < 0 {
			p.sbs, p.verdicts = nil, nil
		} else {
			p.sbs, p.verdicts, p.record, p.at = sbs[i:i+1], p.verdicts[i:i+1], p.verdicts[i:i+1], i
			if err := keptChanged(p.verdicts[0], ev); err != nil {
				p.answer = err
				return p
			}
		}
	} else {
		p.record, p.others = p.verdicts, all[len(sbs):]
		if p.kept = keptGone(all, ev); p.kept != nil && !errors.Is(p.kept, ErrNoEvidence) {
			p.answer = p.kept
			return p
		}
	}
	for _, s := range v.unusable {
		switch {
		case !belongs(s, ev, changed, p.all):
		case len(s.Unsure) > 0: // being written: kept by no row until it can be read, and tried again
			p.cut = append(p.cut, fmt.Errorf("%w: pod %s (uid %s): kept: %s is being written (%s), and whether its network says disableGC cannot be told yet",
				ErrUnusableEntry, ev.Pod, ev.PUID, s.File, s.Why))
		default:
			p.unusable = append(p.unusable, fmt.Errorf("%w: %s: %s", ErrUnusableEntry, s.File, s.Why))
		}
	}
	return p
}

// recordedSandboxes returns the sandboxes of p.record, index for index.
func (p destroyPlan) recordedSandboxes() []sandbox {
	if len(p.record) == len(p.sbs) {
		return p.sbs
	}
	return p.cached[:min(len(p.record), len(p.cached))]
}

// result is DestroyPU's answer once the DELs of p ran: those that failed,
// and the entries of the PU that could not be used. An entry being written
// (p.cut) makes it a plain error: the engine tries again.
func (p destroyPlan) result(failed, unusable []error) error {
	switch {
	case len(failed) > 0 || len(p.cut) > 0 || p.kept != nil && len(unusable) > 0:
		return errors.Join(append(append(append(failed, p.cut...), unusable...), p.kept)...)
	case p.kept != nil:
		return p.kept
	case len(unusable) > 0:
		return ports.Permanent(errors.Join(unusable...))
	}
	return nil
}

// keptChanged returns the error by which DestroyPU keeps the sandbox of a
// sandbox change that decide answered v for, or nil when it is freed.
func keptChanged(v verdict, ev ports.DestroyEvent) error {
	switch v.Action {
	case refuse:
		return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept (freeing row %d: %s)", ErrNewestSandbox, ev.Pod, ev.PUID, v.ID, v.Row, v.why())
	case giveUp:
		return ports.Permanent(fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept, and left alone from now on (row %d: %s)",
			ErrOrderUnknown, ev.Pod, ev.PUID, v.ID, v.Row, v.why()))
	case keep:
		if v.Row == 1 {
			return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept (freeing row %d: %s)", ErrNewestSandbox, ev.Pod, ev.PUID, v.ID, v.Row, v.why())
		}
	}
	return nil
}

// keptGone returns the error by which DestroyPU keeps sandboxes of a gone
// pod that decide answered vs for: ErrSandboxRunning when it keeps them
// all (the runtime runs the pod), ErrNoEvidence when it keeps those
// nothing tells are dead (and frees the others); nil when it keeps none.
func keptGone(vs []verdict, ev ports.DestroyEvent) error {
	var running, unknown []string
	for _, v := range vs {
		switch {
		case v.Row == 1 && v.ID == "":
			running = append(running, "a sandbox the runtime lists ready without an ID")
		case v.Row == 1:
			running = append(running, v.ID)
		case v.Row == 9:
			running = append(running, v.ID+" (being created)")
		case v.Row == 5:
			unknown = append(unknown, v.ID)
		}
	}
	switch {
	case len(running) > 0:
		slices.Sort(running)
		return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept (%s)", ErrSandboxRunning, ev.Pod, ev.PUID, strings.Join(running, ", "), ev.Reason)
	case len(unknown) > 0:
		return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept (%s, row 5: %s)", ErrNoEvidence, ev.Pod, ev.PUID, strings.Join(unknown, ", "), ev.Reason, rowText[5])
	}
	return nil
}

// belongs reports whether the unusable entry s is one DestroyPU(ev) would
// have DELed: of ev's pod (and of ev's sandbox for a sandbox change), as
// far as its JSON or, when that cannot be read, its file name tells; all
// are the verdicts on the pod's sandboxes, the cache's and those the
// Runtime alone lists.
func belongs(s skipped, ev ports.DestroyEvent, changed bool, all []verdict) bool {
	named := func(id string) bool { return id != "" && strings.Contains(s.File, "-"+id+"-") } // by its file's name
	switch {
	case s.PodUID != "": // of the PU's sandbox: its container, or, unread, its file's name
		return s.PodUID == ev.PUID && (!changed || s.ContainerID == ev.SandboxID || s.ContainerID == "" && named(ev.SandboxID))
	case s.ContainerID != "": // its pod not told (its arguments unread, or none): the PU's if its container is
		return s.ContainerID == ev.SandboxID && ev.SandboxID != "" ||
			!changed && slices.ContainsFunc(all, func(v verdict) bool { return v.ID != "" && v.ID == s.ContainerID })
	case changed:
		return named(ev.SandboxID)
	}
	// A gone pod's: of one of its sandboxes, as the cache or the Runtime tells them, or of the PU's own sandbox
	// (its only entry may be the unreadable one).
	return named(ev.SandboxID) || slices.ContainsFunc(all, func(v verdict) bool { return named(v.ID) })
}

// del DELs one attachment with its cached config, arguments and
// capabilities. The network namespace is passed only while it is still
// one: once the sandbox's is gone the spec has the plugins release what
// they hold without it, and a path that is no longer a namespace would
// make them fail.
func (c *Collector) del(ctx context.Context, a attachment, ev ports.DestroyEvent) error {
	rt, err := c.delCheck(a)
	if err != nil {
		return err
	}
	start := time.Now()
	if len(a.List.Plugins) > 0 {
		err = c.cni.DelNetworkList(ctx, a.List, rt)
	} else {
		// readEntry accepted it: a single plugin's config.
		var conf *libcni.PluginConfig
		if conf, err = singlePlugin(a.Config); err == nil {
			err = c.cni.DelNetwork(ctx, conf, rt)
		}
	}
	kv := []any{"network", a.NetworkName, "sandboxID", a.ContainerID, "ifName", a.IfName, "pod", ev.Pod.String(),
		"puID", ev.PUID, "reason", string(ev.Reason), "netns", rt.NetNS, "took", time.Since(start).String()}
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) { // a plugin killed by ctx: say so, as the dry run does
		err = fmt.Errorf("%w: %w", err, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("cni: DEL of network %s, sandbox %s, interface %s: %w", a.NetworkName, a.ContainerID, a.IfName, err)
	}
	c.log.Info(LogMessageFreed, kv...)
	return nil
}

// delCheck returns the runtime config a DEL of a runs with, or why it
// does not run, reading only: errFreedMeanwhile when its entry is gone
// since the cache was read (the runtime's DEL came first: libcni's cached
// result of a missing entry reads as none, and a DEL would run), an
// ErrUnusableEntry when its cached result cannot be read (libcni would
// remove the entry before any plugin runs: it is reported and left as it
// is, so that no leak is lost).
func (c *Collector) delCheck(a attachment) (*libcni.RuntimeConf, error) {
	rt := &libcni.RuntimeConf{
		ContainerID:    a.ContainerID,
		NetNS:          liveNetNS(a.NetNS),
		IfName:         a.IfName,
		Args:           a.CniArgs,
		CapabilityArgs: a.CapabilityArgs,
	}
	info, err := os.Lstat(filepath.Join(c.cache.dir, "results", a.File))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errFreedMeanwhile
	case err == nil && !info.Mode().IsRegular():
		// Replaced since the cache was read, by a link (a DEL through it would remove the link alone) or a named
		// pipe (libcni's read of it would never end): never used, as when it was read so.
		return nil, fmt.Errorf("%w: network %s, sandbox %s, interface %s: its cache entry %s is no longer a regular file (%s)",
			ErrUnusableEntry, a.NetworkName, a.ContainerID, a.IfName, a.File, info.Mode())
	}
	var rerr error
	if len(a.List.Plugins) > 0 {
		_, rerr = c.cni.GetNetworkListCachedResult(a.List, rt)
	} else if conf, err := singlePlugin(a.Config); err == nil {
		_, rerr = c.cni.GetNetworkCachedResult(conf, rt)
	}
	if rerr != nil {
		return nil, fmt.Errorf("%w: network %s, sandbox %s, interface %s: its cached result cannot be read: %v",
			ErrUnusableEntry, a.NetworkName, a.ContainerID, a.IfName, rerr)
	}
	return rt, nil
}

// errFreedMeanwhile: the entry to DEL was gone when the DEL was to run: nothing to do.
var errFreedMeanwhile = errors.New("cni: the entry is gone: freed meanwhile")

// plugins runs the plugins (their DEL, their cached results) as libcni's CNIConfig does, and lets one DestroyPU at a
// time free the attachments of a pod UID (pods).
type plugins struct {
	*libcni.CNIConfig
	pods podLocks
}

// podLocks lets one DestroyPU at a time free the attachments of a pod UID.
type podLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when its holder unlocks
}

// lock waits until no other holds uid, or ctx ends, and holds it until unlock.
func (l *podLocks) lock(ctx context.Context, uid string) (unlock func(), err error) {
	for {
		l.mu.Lock()
		busy, ok := l.held[uid]
		if !ok {
			done := make(chan struct{})
			l.held[uid] = done
			l.mu.Unlock()
			return func() {
				l.mu.Lock()
				delete(l.held, uid)
				l.mu.Unlock()
				close(done)
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Requeue is told by the engine that it destroyed the PU of an old
// sandbox of pod (a sandbox change): it asks a running Resync to list the
// cache at once, so that the pod's next sandbox in the cache is tracked
// and checked without waiting for ResyncInterval. It never blocks; it
// fails only for a nil pod.
func (c *Collector) Requeue(_ context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return errors.New("cni: Requeue: nil pod")
	}
	c.resync.requeue(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, string(pod.UID))
	return nil
}

// Resync feeds t with what the cache holds while the agent runs: every
// ResyncInterval, and at once after Requeue, it lists the PUs (ListPUs)
// and tracks each of them (Track is insert-only: a PU the engine holds
// keeps what it has), and triggers a check of those it did not list the
// time before or listed with another sandbox, and of the pods requeued.
// Its first list triggers, too, each pod listed with a dead sandbox (the
// Runtime lists it stopped, or its network namespace is gone), and an
// Inventory's list (ListPUs) that lists one before that first list has it
// run at once: what a restart left (after a node's reboot, every sandbox)
// is freed now, not at its PU's place in the engine's first interval,
// while the node's new pods wait for their addresses.
// The engine's Inventory lists the cache when the engine starts; Resync
// finds what appears later: the attachment of a pod created since, and the
// next sandbox of a pod whose older one was freed. ListPUs cannot tell
// whose list it answers (the engine's Inventory, or another caller's,
// which tracks nothing): a PU the list before did not tell is new to
// Resync, tracked and triggered, whatever a list of ListPUs since said;
// of one it told, a list of ListPUs since is one more account of the
// sandbox the engine may hold it with. Before Resync's first list, though,
// the answers of ListPUs are taken as the engine's Inventory, their PUs as
// tracked (else a dry run's engine would report each gone pod's PU it
// listed and dropped a second time): until then, call ListPUs from the
// engine alone. What a list a Resync left behind when it returned had told
// the engine stands for the next Resync as told. A pod listed with another sandbox
// than the time before (than the last list of the Resync before, when
// Resync is called again, or than a list of ListPUs since; before Resync's
// first list, than the Inventory's), while the cache still holds an entry of that one
// (whatever it is: of a disableGC network, a link),
// has had its sandboxes' order told meanwhile (the Runtime lists one now;
// a restored cache's times said the opposite): its PU is untracked (never
// destroyed) and tracked with the sandbox listed now, for a PU left on the
// pod's current sandbox would never reach the older one. A list the
// Runtime could not order (it failed) neither moves nor tracks a PU listed
// with another sandbox than before. A list that cannot tell of a pod (an
// entry or the config of its network was being written) forgets nothing
// of it: the next list compares with what was told before, and a pod
// requeued stays requeued, another list following within a second (five
// times in a row at most; then at the next interval); so does a pod
// requeued that a list passes over for another reason (a DestroyPU of it
// ended while the list read, or the Runtime could not order its
// sandboxes), and a pod requeued whose list was under way when a Resync
// returned is the next Resync's. A list that fails (the cache or ConfDir
// cannot be read) tells and compares nothing: the list before and every
// answer of ListPUs since stand for the next, which follows at the next
// interval, or, while a pod is requeued, a second later, doubling at each
// failure up to the interval. At its start and after each list, it
// frees host-local's reservations that no sandbox of the Runtime and no
// cache entry accounts for (the package doc, "host-local's
// reservations"; a dry run only lists them, WouldFree). It returns when ctx
// ends (nil), even while a call of t has not returned (the list under way
// then calls t no more once it does), but for a DEL of a reservation under
// way: ctx's end kills the plugin, whose output is waited for 2 seconds at
// most (a child it left may hold it), so that what the DEL did is told;
// or at once with ErrResyncRunning when another Resync runs.
func (c *Collector) Resync(ctx context.Context, t Tracker) error {
	if ports.IsNil(t) { // a typed nil too (a *deletion.Engine not made yet): Track on it would panic in Resync's goroutine
		return errors.New("cni: Resync: nil Tracker")
	}
	return c.resync.run(ctx, t, c.list, c.freeReservations)
}
