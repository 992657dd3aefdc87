package cni

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
)

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
}

var (
	_ ports.Inventory     = (*Collector)(nil)
	_ ports.PolicyHandler = (*Collector)(nil)
	_ ports.Requeuer      = (*Collector)(nil)
)

// New returns a Collector of the attachments in opts.CacheDir. It fails
// with ErrInvalidOptions when an option is out of range or when CacheDir
// or a plugin directory does not exist: a DaemonSet that forgot to mount
// one would otherwise see no attachment, or fail every DEL.
func New(opts Options) (*Collector, error) {
	if opts.ResyncInterval < 0 {
		return nil, fmt.Errorf("%w: ResyncInterval is negative (%v)", ErrInvalidOptions, opts.ResyncInterval)
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
		cni:      libcni.NewCNIConfigWithCacheDir(slices.Clone(opts.PluginDirs), opts.CacheDir, nil),
		log:      opts.Logger,
		kick:     make(chan struct{}, 1),
		reported: make(map[string]time.Time),
		requeued: make(map[types.NamespacedName]bool),
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
	for _, a := range atts {
		if !v.collectable(a) {
			skips = append(skips, skipped{File: a.File, Written: a.Written, Why: "network " + a.NetworkName + " has disableGC: never touched"})
		}
	}
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
// CNI_ARGS, and its oldest sandbox in the cache (by the time its first
// attachment was written). The engine then destroys that sandbox's
// attachments when it is not the pod's current one (a sandbox changed),
// and every attachment of the pod once the pod is gone; see the package
// doc for why the oldest. Entries without the pod's arguments, unreadable,
// unusable for a DEL or of a disableGC network are skipped, logged once.
func (c *Collector) ListPUs(ctx context.Context) ([]ports.PU, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := c.read()
	if err != nil {
		return nil, err
	}
	oldest := map[string]attachment{}
	for _, a := range v.atts {
		if !v.collectable(a) {
			continue
		}
		o, ok := oldest[a.PodUID]
		if !ok || a.Written.Before(o.Written) || (a.Written.Equal(o.Written) && a.ContainerID < o.ContainerID) {
			oldest[a.PodUID] = a
		}
	}
	pus := make([]ports.PU, 0, len(oldest))
	for uid, a := range oldest {
		pus = append(pus, ports.PU{PUID: uid, Pod: types.NamespacedName{Namespace: a.PodNamespace, Name: a.PodName}, SandboxID: a.ContainerID})
	}
	slices.SortFunc(pus, func(x, y ports.PU) int { return strings.Compare(x.PUID, y.PUID) })
	return pus, nil
}

// DestroyPU DELs, with the cached config and arguments as the runtime
// would, the attachments that ev frees, read from the cache now:
//
//   - ports.ReasonSandboxChanged (the pod lives on in another sandbox):
//     the attachments of ev.SandboxID only, and only when a sandbox of the
//     pod written strictly later is in the cache; otherwise it is kept and
//     the error wraps
//     ErrNewestSandbox (a plain error: the engine checks the pod again);
//   - any other reason (the pod is gone, recreated under its name, bound
//     to another node, or finished): every attachment of the pod UID,
//     whatever its sandbox.
//
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
	v, err := c.read()
	if err != nil {
		return err
	}
	sbs := sandboxesOf(v.atts, ev.PUID)
	changed := ev.Reason == ports.ReasonSandboxChanged
	if changed {
		i := slices.IndexFunc(sbs, func(s sandbox) bool { return s.ID == ev.SandboxID })
		// Only a sandbox of which a strictly newer one is cached is freed:
		// two written at the same instant cannot be told apart.
		newer := i >= 0 && slices.ContainsFunc(sbs, func(s sandbox) bool { return s.Written.After(sbs[i].Written) })
		switch {
		case i < 0:
			sbs = nil
		case !newer && slices.ContainsFunc(sbs[i].Atts, v.collectable):
			return fmt.Errorf("%w: pod %s (uid %s), sandbox %s: kept, the runtime may still be creating it",
				ErrNewestSandbox, ev.Pod, ev.PUID, ev.SandboxID)
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
	c.log.Info("attachment freed", kv...)
	return nil
}

// liveNetNS returns path when it is a network namespace (a mounted nsfs
// file, or a /proc/<pid>/ns/net of a live process), "" otherwise.
func liveNetNS(path string) string {
	if path == "" {
		return ""
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil || st.Type != unix.NSFS_MAGIC {
		return ""
	}
	return path
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
	TriggerPod(types.NamespacedName)
}

// Resync feeds t with what the cache holds while the agent runs: every
// ResyncInterval, and at once after Requeue, it lists the PUs (ListPUs)
// and tracks each of them (Track is insert-only: a PU the engine holds
// keeps what it has), and triggers a check of those it did not list the
// time before or listed with another sandbox, and of the pods requeued. The engine's Inventory lists
// the cache when the engine starts; Resync finds what appears later: the
// attachment of a pod created since, and the next sandbox of a pod whose
// older one was freed. It returns when ctx ends (nil), or at once with
// ErrResyncRunning when another Resync runs.
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
	last := map[string]string{}
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
	pus, err := c.ListPUs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error(err, "listing the cache failed; will list again", "in", c.resyncInterval.String())
		}
		return last
	}
	c.mu.Lock()
	requeued := c.requeued
	c.requeued = make(map[types.NamespacedName]bool)
	c.mu.Unlock()
	now := make(map[string]string, len(pus))
	for _, pu := range pus {
		now[pu.PUID] = pu.SandboxID
		if err := t.Track(pu); err != nil {
			c.log.Error(err, "tracking a PU of the cache failed", "puID", pu.PUID, "pod", pu.Pod.String())
			continue
		}
		if sb, ok := last[pu.PUID]; !ok || sb != pu.SandboxID || requeued[pu.Pod] {
			t.TriggerPod(pu.Pod)
		}
	}
	return now
}
