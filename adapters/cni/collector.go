package cni

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/podsweeper/podsweeper/ports"
)

// Errors of New, DestroyPU and Resync. Match them with errors.Is.
var (
	// ErrInvalidOptions: an Options field is out of range, or a directory
	// it names does not exist.
	ErrInvalidOptions = errors.New("cni: invalid options")
	// ErrUnusableEntry: a cache entry of the PU cannot be read, or its
	// config would run no plugin. DestroyPU wraps it with ports.Permanent;
	// the entry is left as it is, for an operator to look at.
	ErrUnusableEntry = errors.New("cni: unusable cache entry")
	// ErrNewestSandbox: DestroyPU was asked to free a sandbox of a live
	// pod (ports.ReasonSandboxChanged) of which the cache holds no sandbox
	// of the pod written strictly later. It may be one the runtime is
	// still creating, whose sandbox it
	// does not report yet: it is kept, and the error is a plain one, so
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
	// left at zero: more than twice the kubelet's default deadline of a
	// RunPodSandbox (2 minutes), after which no sandbox is still being
	// created.
	DefaultNewestSandboxTimeout = 5 * time.Minute
)

// LogMessageFreed is the message of the line the Collector logs (at info)
// for each attachment a DestroyPU freed: keep it out of a logger's
// sampling (k8s.NewLogger) to find every one in the log.
const LogMessageFreed = "attachment freed"

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
	// did not say so. A directory that does not exist holds no config. "":
	// DefaultConfDir (/etc/cni/net.d).
	ConfDir string
	// ResyncInterval is how often Resync lists the cache again, to track
	// the attachments that appeared since. 0: DefaultResyncInterval (30s).
	// Negative values are invalid.
	ResyncInterval time.Duration
	// Runtime, when set, is the container runtime (adapters/cri's
	// SandboxExtractor): the sandboxes it lists order a pod's sandboxes by
	// their CreatedAt, and tell a sandbox that is stopped, or dead (not
	// listed, its network namespace gone), from one being created; and a
	// pod of which it lists a ready sandbox, or may be creating one, is
	// never freed, whatever the API says (ErrSandboxRunning). nil: the sandboxes are ordered by when
	// their cache entries were written, which a restored or copied cache
	// does not keep, and the API's answer alone decides.
	Runtime Runtime
	// NewestSandboxTimeout is how long DestroyPU refuses to free a sandbox
	// of a live pod whose place among the pod's sandboxes it cannot tell
	// (ErrNewestSandbox: it may be one the runtime is creating) before it
	// gives up on it (ErrOrderUnknown), and how long it keeps a gone pod
	// for a sandbox the runtime may be creating (ErrSandboxRunning) before
	// it frees it with the pod; timed from the first refusal since the
	// runtime last listed the sandbox ready. 0: DefaultNewestSandboxTimeout
	// (5m). Negative values are invalid.
	NewestSandboxTimeout time.Duration
	// Logger receives the cache entries skipped (once each) and the DELs
	// run. A Logger without a sink (the zero value) logs through klog
	// (klog.Background()), as the engine does.
	Logger logr.Logger
}

// Collector frees the network attachments that CNI plugins keep for pods
// that are gone, by calling the plugins' own DEL as the runtime would have.
// It is the engine's Inventory (ListPUs), its PolicyHandler (DestroyPU) and
// its Requeuer (Requeue); Resync feeds the engine while it runs. Build it
// with New; its methods are safe from any goroutine.
type Collector struct {
	cacheDir, confDir string
	pluginDirs        []string
	resyncInterval    time.Duration
	cni               *libcni.CNIConfig
	runtime           Runtime
	newestTimeout     time.Duration
	log               logr.Logger
	// kick asks a running Resync to list at once.
	kick      chan struct{}
	resyncing atomic.Bool

	mu sync.Mutex
	// reported holds the skipped entries logged already, with the
	// modification time they were logged for.
	reported map[string]time.Time
	// requeued are the pods Requeue was told about since the last resync.
	requeued map[types.NamespacedName]bool
	// refused holds when DestroyPU first refused to free each sandbox
	// whose order it cannot tell, or that the runtime may be creating,
	// since the runtime last listed it ready; gaveUp the sandboxes it gave
	// up on. Both forget a sandbox once the cache no longer holds it.
	refused map[string]time.Time
	gaveUp  map[string]bool
	// listed is ListPUs' last answer (the engine's Inventory), from which
	// Resync begins.
	listed map[string]string
	// destroys numbers the DestroyPU calls that ended; destroyed holds,
	// for each PUID, the number of the last, since the list under way of
	// Resync began (see resyncOnce).
	destroys  uint64
	destroyed map[string]uint64
}

var (
	_ ports.Inventory     = (*Collector)(nil)
	_ ports.PolicyHandler = (*Collector)(nil)
	_ ports.Requeuer      = (*Collector)(nil)
	_ ports.SandboxProber = (*Collector)(nil)
)

// New returns a Collector of the attachments in opts.CacheDir. It fails
// with ErrInvalidOptions when an option is out of range or when CacheDir
// or a plugin directory does not exist: a DaemonSet that forgot to mount
// one would otherwise see no attachment, or fail every DEL.
func New(opts Options) (*Collector, error) {
	if opts.ResyncInterval < 0 {
		return nil, fmt.Errorf("%w: ResyncInterval is negative (%v)", ErrInvalidOptions, opts.ResyncInterval)
	}
	if opts.NewestSandboxTimeout < 0 {
		return nil, fmt.Errorf("%w: NewestSandboxTimeout is negative (%v)", ErrInvalidOptions, opts.NewestSandboxTimeout)
	}
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
	for _, d := range append([]string{opts.CacheDir}, opts.PluginDirs...) {
		if d == "" {
			return nil, fmt.Errorf("%w: an empty plugin directory", ErrInvalidOptions)
		}
		info, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%w: %s is not a directory", ErrInvalidOptions, d)
		}
	}
	return &Collector{
		cacheDir:       opts.CacheDir,
		confDir:        opts.ConfDir,
		pluginDirs:     slices.Clone(opts.PluginDirs),
		resyncInterval: opts.ResyncInterval,
		// The cache directory goes to the CNIConfig: libcni ignores
		// RuntimeConf.CacheDir in some of its paths.
		cni:           libcni.NewCNIConfigWithCacheDir(slices.Clone(opts.PluginDirs), opts.CacheDir, pluginExec()),
		runtime:       opts.Runtime,
		newestTimeout: opts.NewestSandboxTimeout,
		log:           opts.Logger,
		kick:          make(chan struct{}, 1),
		reported:      make(map[string]time.Time),
		requeued:      make(map[types.NamespacedName]bool),
		refused:       make(map[string]time.Time),
		destroyed:     make(map[string]uint64),
		gaveUp:        make(map[string]bool),
	}, nil
}

// view is one read of the cache.
type view struct {
	// atts are the pods' attachments, those of disableGC networks included.
	atts []attachment
	// unusable are the entries that cannot be read or used for a DEL.
	unusable []skipped
	// keepNets are the networks whose config in ConfDir says disableGC.
	keepNets map[string]bool
}

// collectable reports whether the collector may DEL a.
func (v view) collectable(a attachment) bool {
	return !a.List.DisableGC && !v.keepNets[a.NetworkName]
}

// read reads the cache and the config directory, and logs once each
// entry it skips.
func (c *Collector) read() (view, error) {
	keep, err := disableGCNetworks(c.confDir)
	if err != nil {
		return view{}, err
	}
	atts, skips, err := readCache(c.cacheDir)
	if err != nil {
		return view{}, err
	}
	v := view{atts: atts, keepNets: keep}
	for _, s := range skips {
		if s.Unreadable {
			v.unusable = append(v.unusable, s)
		}
	}
	held := make(map[string]bool, len(atts))
	c.mu.Lock()
	for _, a := range atts {
		held[a.ContainerID] = true
		switch {
		case !v.collectable(a):
			skips = append(skips, skipped{File: a.File, Written: a.Written, Why: "network " + a.NetworkName + " has disableGC: never touched"})
		case c.gaveUp[a.ContainerID]:
			skips = append(skips, skipped{File: a.File, Written: a.Written,
				Why: "its sandbox's place among the pod's sandboxes cannot be told (" + ErrOrderUnknown.Error() + "): kept until the collector restarts or the pod is gone"})
		}
	}
	for id := range c.refused {
		if !held[id] {
			delete(c.refused, id)
		}
	}
	for id := range c.gaveUp {
		if !held[id] {
			delete(c.gaveUp, id)
		}
	}
	c.mu.Unlock()
	c.report(skips)
	return v, nil
}

// report logs each skipped entry once, and again once it is rewritten.
func (c *Collector) report(skips []skipped) {
	seen := make(map[string]bool, len(skips))
	c.mu.Lock()
	var fresh []skipped
	for _, s := range skips {
		seen[s.File] = true
		if t, ok := c.reported[s.File]; !ok || !t.Equal(s.Written) {
			c.reported[s.File] = s.Written
			fresh = append(fresh, s)
		}
	}
	for f := range c.reported {
		if !seen[f] {
			delete(c.reported, f)
		}
	}
	c.mu.Unlock()
	for _, s := range fresh {
		c.log.Info("skipping a cache entry: it is never deleted", "file", s.File, "why", s.Why)
	}
}

// ListPUs lists the pods that hold collectable attachments in the cache,
// one PU per pod UID: its namespace and name from the attachments'
// CNI_ARGS, and its oldest sandbox in the cache: by the runtime's
// CreatedAt where Options.Runtime lists the sandbox, otherwise by the time
// its first attachment was written; but a dead sandbox (the Runtime lists
// it stopped, or does not list it and its network namespace is gone) comes
// before every other, one it may be creating (not listed, its namespace
// there) after those it tells nothing of, and one it lists ready (the
// pod's current one) last, whatever the times say (a restored cache's
// times say nothing). The engine then destroys that
// sandbox's attachments when it is not the pod's current one (a sandbox
// changed), and every attachment of the pod once the pod is gone; see the
// package doc for why the oldest. A sandbox DestroyPU gave up on
// (ErrOrderUnknown) is passed over; a pod left with no other sandbox is
// listed without one, so that the engine records its current sandbox
// (row 7) and frees everything once the pod is gone. Entries without the
// pod's arguments, unreadable, unusable for a DEL or of a disableGC
// network are skipped, logged once. A Runtime that cannot be asked makes
// the order the cache's, logged.
func (c *Collector) ListPUs(ctx context.Context) ([]ports.PU, error) {
	pus, _, _, err := c.list(ctx)
	if err == nil {
		c.mu.Lock()
		c.listed = sandboxesByPUID(pus)
		c.mu.Unlock()
	}
	return pus, err
}

// destroyedSince reports whether a DestroyPU of puid ended after the
// destroys-th.
func (c *Collector) destroyedSince(puid string, destroys uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.destroyed[puid] > destroys
}

// sandboxesByPUID maps each of pus's PUIDs to its sandbox.
func sandboxesByPUID(pus []ports.PU) map[string]string {
	m := make(map[string]string, len(pus))
	for _, pu := range pus {
		m[pu.PUID] = pu.SandboxID
	}
	return m
}

// list is ListPUs, and returns the sandboxes it could have listed too (the
// IDs of the collectable attachments, but those given up on), and whether
// the order is the Runtime's (or there is no Runtime).
func (c *Collector) list(ctx context.Context) ([]ports.PU, map[string]bool, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err
	}
	v, err := c.read()
	if err != nil {
		return nil, nil, false, err
	}
	rv, err := c.listRuntime(ctx, "")
	if err != nil {
		c.log.Error(err, "ordering the sandboxes by the cache's times")
	}
	told := err == nil
	c.mu.Lock()
	gaveUp := maps.Clone(c.gaveUp)
	c.mu.Unlock()
	oldest, held := map[string]choice{}, map[string]bool{}
	for _, a := range v.atts {
		if !v.collectable(a) {
			continue
		}
		o, ok := oldest[a.PodUID]
		if gaveUp[a.ContainerID] {
			if !ok {
				oldest[a.PodUID] = choice{a: a, none: true}
			}
			continue
		}
		held[a.ContainerID] = true
		x := choice{a: a, created: rv.created(a.ContainerID, a.Written), rank: rv.rank(a)}
		if x.rank == rankReady {
			_ = c.settled(a.ContainerID) // its place is known: the pod's current one
		}
		if !ok || o.none || x.before(o) {
			oldest[a.PodUID] = x
		}
	}
	pus := make([]ports.PU, 0, len(oldest))
	for uid, o := range oldest {
		pu := ports.PU{PUID: uid, Pod: types.NamespacedName{Namespace: o.a.PodNamespace, Name: o.a.PodName}, SandboxID: o.a.ContainerID}
		if o.none {
			pu.SandboxID = ""
		}
		pus = append(pus, pu)
	}
	slices.SortFunc(pus, func(x, y ports.PU) int { return strings.Compare(x.PUID, y.PUID) })
	return pus, held, told, nil
}

// choice is a sandbox ListPUs may give a pod's PU.
type choice struct {
	a       attachment
	created time.Time
	rank    int  // what the Runtime tells of it (runtimeView.rank)
	none    bool // the pod has only sandboxes given up on
}

// before reports whether x comes before y in ListPUs' order.
func (x choice) before(y choice) bool {
	if x.rank != y.rank {
		return x.rank < y.rank
	}
	if !x.created.Equal(y.created) {
		return x.created.Before(y.created)
	}
	return x.a.ContainerID < y.a.ContainerID
}

// SandboxDead reports whether the sandbox of that ID, one of pod's, is dead:
// Options.Runtime lists it stopped (not ready), or does not list it and the
// network namespace an attachment of it was added with is gone (containerd
// and CRI-O create it before ADD: a sandbox being created has one). Without
// a Runtime, no sandbox is known to be dead. It is the engine's
// ports.SandboxProber, so that the attachments of a dead sandbox are freed
// while its pod waits for a new one: after the node lost its runtime's
// state, the new sandbox's ADD may be failing for want of the very
// addresses the dead one holds. An error means the runtime or the cache
// could not be read.
func (c *Collector) SandboxDead(ctx context.Context, pod *corev1.Pod, sandboxID string) (bool, error) {
	switch {
	case pod == nil || pod.UID == "" || sandboxID == "":
		return false, fmt.Errorf("cni: SandboxDead needs a pod with a UID and a sandbox ID (pod %v, sandbox %q)", pod != nil, sandboxID)
	case c.runtime == nil:
		return false, nil
	}
	rv, err := c.listRuntime(ctx, string(pod.UID))
	if err != nil {
		return false, err
	}
	if sb, ok := rv.byID[sandboxID]; ok {
		return sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY, nil
	}
	v, err := c.read()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(v.atts, func(a attachment) bool {
		return a.ContainerID == sandboxID && a.PodUID == string(pod.UID) && netnsGone(a.NetNS)
	}), nil
}

// DestroyPU DELs, with the cached config and arguments as the runtime
// would, the attachments that ev frees, read from the cache now:
//
//   - ports.ReasonSandboxChanged (the pod lives on in another sandbox) and
//     ports.ReasonSandboxDead (its sandbox is dead, a new one to come):
//     the attachments of ev.SandboxID only, and only once it is known not
//     to be a sandbox the runtime is still creating (which containerd
//     lists only after ADD, create and start): Options.Runtime lists it
//     stopped (not ready); or a sandbox of the pod, cached or listed, was
//     created strictly later (the runtime's CreatedAt where it lists one,
//     the cache's write time otherwise); or the Runtime does not list it
//     and the network namespace it was added with is gone (containerd and
//     CRI-O create it before ADD). Otherwise it is kept and the error
//     wraps ErrNewestSandbox (a plain error: the engine checks the pod
//     again); once DestroyPU has refused it for NewestSandboxTimeout, the
//     error wraps ErrOrderUnknown, marked ports.Permanent, and the
//     sandbox is left alone from then on (ListPUs passes it over). A
//     sandbox the Runtime lists ready is kept (ErrNewestSandbox);
//   - any other reason (the pod is gone, recreated under its name, bound
//     to another node, or finished): every attachment of the pod UID,
//     whatever its sandbox; but nothing while the Runtime lists a ready
//     sandbox of that UID, or does not list a cached one whose network
//     namespace is there, which it may be creating (ErrSandboxRunning, a
//     plain error: the runtime runs the pod, as the kubelet runs a static
//     pod whose mirror pod is missing, whatever the API says).
//
// A Runtime that cannot be asked keeps everything (a plain error).
// Attachments of disableGC networks are never DELed. An attachment gone
// already (the runtime's DEL came first, or a previous call) is nothing to
// do, so DestroyPU is idempotent. A DEL that fails keeps its entry and
// makes a plain error, for the engine to retry with backoff; the other
// attachments are DELed meanwhile. An entry of the PU that cannot be read
// or would run no plugin makes an error wrapping ErrUnusableEntry, marked
// ports.Permanent once every other attachment is freed.
func (c *Collector) DestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	if ev.PUID == "" {
		return ports.Permanent(errors.New("cni: DestroyPU of a PU without a PUID"))
	}
	defer c.ended(ev.PUID)
	v, err := c.read()
	if err != nil {
		return err
	}
	rv, err := c.listRuntime(ctx, ev.PUID)
	if err != nil {
		return fmt.Errorf("%w: pod %s (uid %s) kept", err, ev.Pod, ev.PUID)
	}
	sbs := sandboxesOf(v.atts, ev.PUID, rv)
	changed := ev.Reason == ports.ReasonSandboxChanged || ev.Reason == ports.ReasonSandboxDead
	if !changed {
		running := rv.ready(ev.PUID)
		for _, id := range running {
			_ = c.settled(id) // listed ready: a refusal to come is timed from now
		}
		var expired []string
		for _, sb := range sbs {
			if !rv.creating(sb) {
				continue
			}
			if d, long := c.refuse(sb.ID); long {
				expired = append(expired, fmt.Sprintf("%s (%v)", sb.ID, d.Round(time.Second)))
				continue
			}
			running = append(running, sb.ID+" (being created)")
		}
		if len(running) == 0 && len(expired) > 0 {
			c.log.Info("sandboxes the runtime has not listed for NewestSandboxTimeout are not ones it is creating; freed with their pod",
				"puID", ev.PUID, "pod", ev.Pod.String(), "sandboxes", strings.Join(expired, ", "))
		}
		if len(running) > 0 {
			slices.Sort(running)
			return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept (%s)", ErrSandboxRunning, ev.Pod, ev.PUID, strings.Join(running, ", "), ev.Reason)
		}
	}
	if changed {
		i := slices.IndexFunc(sbs, func(s sandbox) bool { return s.ID == ev.SandboxID })
		switch {
		case i < 0:
			sbs = nil
		case slices.ContainsFunc(sbs[i].Atts, v.collectable):
			if err := c.mayFreeChanged(rv, sbs, i, ev); err != nil {
				return err
			}
			sbs = sbs[i : i+1]
		default:
			sbs = sbs[i : i+1]
		}
	}
	var failed, unusable []error
	freed := 0
	for _, sb := range sbs {
		for _, a := range sb.Atts {
			if !v.collectable(a) {
				continue
			}
			if err := c.del(ctx, a, ev); err != nil {
				failed = append(failed, err)
				continue
			}
			freed++
		}
	}
	for _, s := range v.unusable {
		if belongs(s, ev, changed, sbs) {
			unusable = append(unusable, fmt.Errorf("%w: %s: %s", ErrUnusableEntry, s.File, s.Why))
		}
	}
	switch {
	case len(failed) > 0:
		return errors.Join(append(failed, unusable...)...)
	case len(unusable) > 0:
		return ports.Permanent(errors.Join(unusable...))
	}
	if freed == 0 {
		c.log.V(1).Info("nothing cached to free", "puID", ev.PUID, "pod", ev.Pod.String(), "sandboxID", ev.SandboxID, "reason", string(ev.Reason))
	}
	return nil
}

// mayFreeChanged decides whether the sandbox sbs[i] of a live pod may be
// freed for a sandbox change (see DestroyPU): nil when it may, an error
// wrapping ErrNewestSandbox while it may be one the runtime is creating,
// and ErrOrderUnknown (permanent) once that has lasted
// NewestSandboxTimeout.
func (c *Collector) mayFreeChanged(rv runtimeView, sbs []sandbox, i int, ev ports.DestroyEvent) error {
	sb := sbs[i]
	if listed, ok := rv.byID[sb.ID]; ok {
		if listed.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			_ = c.settled(sb.ID) // its place is known: it is current
			return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept, the runtime reports it ready", ErrNewestSandbox, ev.Pod, ev.PUID, sb.ID)
		}
		return c.settled(sb.ID) // stopped: not being created
	}
	newer := rv.newestCreated(ev.PUID).After(sb.Created) ||
		slices.ContainsFunc(sbs, func(s sandbox) bool { return s.Created.After(sb.Created) })
	dead := rv.asked && slices.ContainsFunc(sb.Atts, func(a attachment) bool { return netnsGone(a.NetNS) })
	if newer || dead {
		return c.settled(sb.ID)
	}
	refusedFor, giveUp := c.refuse(sb.ID)
	if giveUp {
		c.mu.Lock()
		c.gaveUp[sb.ID] = true
		delete(c.refused, sb.ID)
		c.mu.Unlock()
		return ports.Permanent(fmt.Errorf("%w: pod %s (uid %s), sandbox %s: refused as the newest for %v; kept, and left alone from now on",
			ErrOrderUnknown, ev.Pod, ev.PUID, sb.ID, refusedFor.Round(time.Second)))
	}
	return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept, the runtime may still be creating it",
		ErrNewestSandbox, ev.Pod, ev.PUID, sb.ID)
}

// ended records that a DestroyPU of puid ended: a list of Resync that began
// before does not track that PU again (resyncOnce).
func (c *Collector) ended(puid string) {
	c.mu.Lock()
	c.destroys++
	c.destroyed[puid] = c.destroys
	c.mu.Unlock()
}

// refuse records that DestroyPU refuses to free the sandbox id now, and
// returns for how long it has refused it (since the first refusal after
// the Runtime last listed it ready, see settled) and whether that is
// NewestSandboxTimeout or more. The time is kept until the sandbox is
// settled, given up on or gone from the cache.
func (c *Collector) refuse(id string) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	first, ok := c.refused[id]
	if !ok {
		first, c.refused[id] = now, now
	}
	d := now.Sub(first)
	return d, d >= c.newestTimeout
}

// settled forgets that DestroyPU refused the sandbox id: its order is
// known now. It returns nil.
func (c *Collector) settled(id string) error {
	c.mu.Lock()
	delete(c.refused, id)
	c.mu.Unlock()
	return nil
}

// belongs reports whether the unusable entry s is one DestroyPU(ev) would
// have DELed: of ev's pod (and of ev's sandbox for a sandbox change), as
// far as its JSON or, when that cannot be read, its file name tells.
func belongs(s skipped, ev ports.DestroyEvent, changed bool, sbs []sandbox) bool {
	switch {
	case s.PodUID != "":
		return s.PodUID == ev.PUID && (!changed || s.ContainerID == ev.SandboxID)
	case s.ContainerID != "":
		return false // read, and of no pod
	case changed:
		return ev.SandboxID != "" && strings.Contains(s.File, "-"+ev.SandboxID+"-")
	}
	return slices.ContainsFunc(sbs, func(sb sandbox) bool { return strings.Contains(s.File, "-"+sb.ID+"-") })
}

// pluginExec runs the plugins as libcni does by default. It is given to
// libcni up front: a CNIConfig without one makes it on first use, a write
// that concurrent DELs of the engine's workers race on.
func pluginExec() invoke.Exec {
	return &invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: os.Stderr}, PluginDecoder: version.PluginDecoder{}}
}

// del DELs one attachment with its cached config, arguments and
// capabilities. The network namespace is passed only while it is still
// one: once the sandbox's is gone the spec has the plugins release what
// they hold without it, and a path that is no longer a namespace would
// make them fail.
func (c *Collector) del(ctx context.Context, a attachment, ev ports.DestroyEvent) error {
	rt := &libcni.RuntimeConf{
		ContainerID:    a.ContainerID,
		NetNS:          liveNetNS(a.NetNS),
		IfName:         a.IfName,
		Args:           a.CniArgs,
		CapabilityArgs: a.CapabilityArgs,
	}
	start := time.Now()
	var err error
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
	if err != nil {
		return fmt.Errorf("cni: DEL of network %s, sandbox %s, interface %s: %w", a.NetworkName, a.ContainerID, a.IfName, err)
	}
	c.log.Info(LogMessageFreed, kv...)
	return nil
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
	c.mu.Lock()
	c.requeued[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// Tracker is what Resync needs of a deletion engine; *deletion.Engine has it.
type Tracker interface {
	Track(ports.PU) error
	Untrack(puid string) bool
	TriggerPod(types.NamespacedName)
}

// Resync feeds t with what the cache holds while the agent runs: every
// ResyncInterval, and at once after Requeue, it lists the PUs (ListPUs)
// and tracks each of them (Track is insert-only: a PU the engine holds
// keeps what it has), and triggers a check of those it did not list the
// time before or listed with another sandbox, and of the pods requeued.
// The engine's Inventory lists the cache when the engine starts; Resync
// finds what appears later: the attachment of a pod created since, and the
// next sandbox of a pod whose older one was freed. A pod listed with
// another sandbox than the time before (or than the Inventory's list, for
// a pod Resync has not listed yet), while the cache still holds that one,
// has had its sandboxes' order told meanwhile (the Runtime lists one now;
// a restored cache's times said the opposite): its PU is untracked (never
// destroyed) and tracked with the sandbox listed now, for a PU left on the
// pod's current sandbox would never reach the older one. A list the
// Runtime could not order (it failed) neither moves nor tracks a PU listed
// with another sandbox than before. It returns when ctx
// ends (nil), or at once with ErrResyncRunning when another Resync runs.
func (c *Collector) Resync(ctx context.Context, t Tracker) error {
	if t == nil {
		return errors.New("cni: Resync: nil Tracker")
	}
	if !c.resyncing.CompareAndSwap(false, true) {
		return ErrResyncRunning
	}
	defer c.resyncing.Store(false)
	tick := time.NewTicker(c.resyncInterval)
	defer tick.Stop()
	var last map[string]string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-c.kick:
		}
		last = c.resyncOnce(ctx, t, last)
	}
}

// resyncOnce lists the cache and tracks what it lists; last is the
// previous list (PUID to sandbox), and the new one is returned.
func (c *Collector) resyncOnce(ctx context.Context, t Tracker, last map[string]string) map[string]string {
	c.mu.Lock()
	began := c.destroys
	clear(c.destroyed) // a DestroyPU that ended before this list began is in it
	c.mu.Unlock()
	pus, held, told, err := c.list(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error(err, "listing the cache failed; will list again", "in", c.resyncInterval.String())
		}
		return last
	}
	c.mu.Lock()
	requeued, inventory := c.requeued, c.listed
	c.requeued = make(map[types.NamespacedName]bool)
	c.mu.Unlock()
	now := sandboxesByPUID(pus)
	for _, pu := range pus {
		if c.destroyedSince(pu.PUID, began) {
			// The engine destroyed it, or tried, while the cache was read: the
			// list may hold what that DestroyPU freed, and the engine no PU to
			// insert it into. The next list has it if it is still there.
			delete(now, pu.PUID)
			continue
		}
		was, ok := last[pu.PUID]
		if !ok {
			was, ok = inventory[pu.PUID] // tracked from the Inventory's list, if at all
		}
		if !told && ok && was != pu.SandboxID {
			// An order of the cache's times: neither tracked nor compared; the
			// next list the runtime orders is compared with what was.
			now[pu.PUID] = was
			continue
		}
		if ok && was != "" && was != pu.SandboxID && held[was] && t.Untrack(pu.PUID) {
			c.log.Info("the order of a pod's sandboxes is told now; its PU is tracked again with the older one",
				"puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID, "before", was)
		}
		if err := t.Track(pu); err != nil {
			c.log.Error(err, "tracking a PU of the cache failed", "puID", pu.PUID, "pod", pu.Pod.String())
			continue
		}
		if sb, ok := last[pu.PUID]; !ok || sb != now[pu.PUID] || requeued[pu.Pod] {
			t.TriggerPod(pu.Pod)
		}
	}
	return now
}
