package k8s

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// ErrInvalidSetup is returned by SetupWithManager, SetupClusterWithManager,
// NodeCacheOptions and NewEvents for a missing or contradictory argument.
// Match it with errors.Is.
var ErrInvalidSetup = errors.New("k8s: invalid setup")

// nodeNameField is the pod field the API server can select on.
const nodeNameField = "spec.nodeName"

// SetupOptions configure SetupWithManager.
//
// The node and the SandboxExtractor are not among them: SetupWithManager
// reads the node from the engine (deletion.Options.NodeName), and the
// extractor is the engine's alone (deletion.Options.SandboxExtractor),
// called in its checks; each is given in one place, so the wiring and the
// engine cannot disagree. Had they disagreed on the node, the engine would
// destroy every PU the wiring tracks for NodeChanged, the wiring would
// track it again at the pod's next event, and so on.
type SetupOptions struct {
	// Filter says which of the pods bound to the node (of every pod, for
	// SetupClusterWithManager) have a PU: the wiring tracks only the pods
	// it accepts (PodsWithOwnNetwork is the one a
	// network-policy agent wants). A rejected pod's updates trigger no
	// check; its delete still does, which is harmless when nothing is
	// tracked for it. Filter is called on the informer's goroutine with the
	// informer's own object: it must be fast and must not modify the pod. A
	// panic in it is logged and the pod skipped. nil: every pod bound to the
	// node (every pod) is tracked.
	Filter func(*corev1.Pod) bool
	// Logger receives the wiring's errors. The zero value logs through klog
	// (klog.Background()), the default of every Logger in podsweeper.
	Logger logr.Logger
	// Cache is the cache whose pod informer the wiring watches. nil:
	// mgr.GetCache(). Give podsweeper a cache of its own when the
	// manager's must keep full pods for other readers and podsweeper's
	// should be slim (SlimPodCacheOptions): build it with cache.New from
	// the manager's config, scheme, mapper and HTTP client, add it to the
	// manager (mgr.Add, which starts and stops it with the manager), and
	// give the same cache to the engine's PodGetter (NewPodGetter), so that
	// the handler and the checks see the same pods. The manager runs such a
	// cache with its Runnables that need leader election (a cache from
	// cache.New does not say otherwise): at once for a node agent without
	// leader election, on taking the lease for a cluster-wide replica,
	// whose standby then holds none of its pods. The manager does not wait
	// for it to sync, but the engine starts only once the handler has been
	// given its pods. See the SetupOptions example.
	Cache cache.Cache
	// LeaseFence, for SetupClusterWithManager only, is the lock of the
	// manager's leader election (manager.Options.LeaderElectionResourceLockInterface):
	// the engine then runs only while the Lease was renewed within the
	// renew deadline, and stops before another replica can take it (see
	// LeaseFence). nil: the engine stops when the manager gives up the
	// Lease, which may come after another replica took it.
	LeaseFence *LeaseFence
}

// SetupWithManager wires c into mgr for the node c runs for
// (deletion.Options.NodeName, which must be set). It adds c to mgr as a
// Runnable that needs no leader election (every node runs its own engine),
// and, while it runs, watches pods through the informer of opts.Cache
// (mgr.GetCache() by default):
//
//   - a pod added or updated that is bound to the node and that
//     opts.Filter accepts is tracked, keyed by its UID, without a sandbox,
//     unless the cache no longer holds it under that UID (the event came
//     after the pod was deleted or replaced, and a check may have destroyed
//     its PU already);
//     pods not bound yet are skipped until they are, pods in the Succeeded
//     or Failed phase are tracked like any other (their PU lives until the
//     pod is deleted, unless the engine's DestroyTerminated says otherwise);
//   - every add and every change of such a pod (a resync, which changes
//     nothing, excepted), an update in which the pod was replaced (another
//     UID), and every delete (DeletedFinalStateUnknown tombstones included)
//     calls TriggerPod, so that the engine checks the pod at once instead of
//     at the next sweep: its first check records the sandbox c's
//     SandboxExtractor reports (row 7 of the decision table), a later one
//     sees a sandbox replaced, a deleted pod's destroys its PU.
//
// The handler never calls the SandboxExtractor: the engine does, in its
// checks, on at most Workers goroutines and under CheckTimeout. A slow or
// hung container runtime thus delays checks, never the informer, which
// delivers the events of every pod of the node on one goroutine; and it
// costs no goroutine beyond the engine's workers. Each check an event
// triggers costs a read of the cache and, with an extractor, one call to
// it; the engine runs one check of a PU at a time, so a burst of events
// of one pod costs a check or two. The handler never waits
// for a check either (TriggerPod never blocks); Track waits only for the
// engine's Observer, a journal's commit say. The handler is removed from
// the informer when the manager stops. Track is insert-only: a PU the main
// controller tracked with its sandbox keeps it, and after a SandboxChanged
// destroy the new sandbox's PU is tracked at the pod's next event, or at
// once by the main controller calling c.Track when it creates that PU.
//
// With SlimPodCacheOptions the cache holds only what the wiring, the
// engine and PodsWithOwnNetwork read of each pod, and every reader of that
// cache sees the same slim pods (see there).
//
// Without NodeCacheOptions the wiring still works, but the manager caches
// every pod of the cluster. Give NodeCacheOptions the engine's node
// (the deletion.Options.NodeName): SetupWithManager cannot check the cache's selector, for a
// manager does not expose its cache's options. A cache scoped to another
// node holds none of this node's pods, so the wiring tracks nothing and a
// PU tracked by the agent itself reads as gone: with NewPodGetter over
// mgr.GetAPIReader() as the engine's Confirmer, that destroy is vetoed and
// the PU kept; without one, it is destroyed.
func SetupWithManager(mgr manager.Manager, c *deletion.Engine, opts SetupOptions) error {
	return setup(mgr, c, opts, false)
}

// setup is SetupWithManager (leaderElected false) and
// SetupClusterWithManager (true): the one way the engine is wired, with a
// pod event handler and a Runnable, whose only difference is whether the
// Runnable needs the manager's lease.
func setup(mgr manager.Manager, c *deletion.Engine, opts SetupOptions, leaderElected bool) error {
	switch {
	case mgr == nil:
		return fmt.Errorf("%w: manager is nil", ErrInvalidSetup)
	case c == nil:
		return fmt.Errorf("%w: deletion engine is nil", ErrInvalidSetup)
	case !leaderElected && !hasNode(c):
		return fmt.Errorf("%w: the deletion engine has no node: set deletion.Options.NodeName", ErrInvalidSetup)
	case leaderElected && hasNode(c):
		return fmt.Errorf("%w: the deletion engine has a node: a cluster-wide engine must have none (deletion.Options.NodeName), or it destroys the PU of every pod of another node",
			ErrInvalidSetup)
	case !leaderElected && opts.LeaseFence != nil:
		return fmt.Errorf("%w: a LeaseFence is for SetupClusterWithManager: a node agent's engine holds no Lease", ErrInvalidSetup)
	}
	podCache := opts.Cache
	if podCache == nil {
		podCache = mgr.GetCache()
	}
	// The cache has not started yet, so this neither blocks nor lists.
	inf, err := podCache.GetInformer(context.Background(), &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("k8s: getting the pod informer: %w", err)
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = klog.Background().WithName("podsweeper-wiring")
	}
	r := &engineRunnable{engine: c, informer: inf, reader: podCache, opts: opts, leaderElected: leaderElected}
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("k8s: adding the deletion engine to the manager: %w", err)
	}
	return nil
}

// hasNode reports whether c runs for a node: such an engine sees a pod
// bound to no node as elsewhere (deletion.Engine.Classify).
func hasNode(c *deletion.Engine) bool {
	return c.Classify(&corev1.Pod{}) == deletion.PodElsewhere
}

// PodsWithOwnNetwork is a SetupOptions.Filter for a network-policy agent.
// It accepts the pods that run in a network namespace of their own, and
// rejects:
//
//   - host-network pods (spec.hostNetwork): they share the node's network,
//     so the agent creates no PU for them;
//   - mirror pods (annotation kubernetes.io/config.mirror): the API's copy
//     of a static pod the kubelet runs from a file; the runtime knows that
//     pod by the kubelet's UID, not by the mirror's, so no PU is ever
//     created under the mirror's UID.
//
// Tracking either would ask the policy engine to destroy a PU it never
// created, and retry that for as long as it failed. A nil pod is rejected.
func PodsWithOwnNetwork(pod *corev1.Pod) bool {
	if pod == nil || pod.Spec.HostNetwork {
		return false
	}
	_, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return !mirror
}

// NodeCacheOptions returns a copy of opts whose pod cache holds only the
// pods bound to node (field selector spec.nodeName=node). A node agent only
// cares about its own pods: without this its manager would list and watch
// every pod of the cluster, costing memory and API server load on every
// node. Pass the result as manager.Options.Cache, through
// SlimPodCacheOptions first to keep only what podsweeper reads of each
// pod. A field selector already in opts for pods is kept and combined with
// the node selector: the type's (ByObject), opts.DefaultFieldSelector
// when the type has none, and a namespace's own (in the type's Namespaces
// or in DefaultNamespaces), which controller-runtime prefers to the
// type's: every namespace's pods are scoped to the node, each with the
// selector controller-runtime would have given it. A pod entry of opts
// keyed by another Go type (a PartialObjectMetadata or Unstructured of kind
// Pod, which controller-runtime reads as the settings of pods too) is
// scoped as well.
//
// With the cache scoped, a pod recreated under the same name on another
// node reads as gone, so its old PU is destroyed for PodGone rather than
// NodeChanged or UIDChanged: the PU goes either way.
func NodeCacheOptions(node string, opts cache.Options) (cache.Options, error) {
	if node == "" {
		return opts, fmt.Errorf("%w: node name is empty", ErrInvalidSetup)
	}
	nodeSel := fields.OneTermEqualSelector(nodeNameField, node)
	byObject, podKeys := podByObject(opts)
	for _, key := range podKeys {
		typ := byObject[key]
		cfg := typ
		// As controller-runtime defaults it: a selector set, an empty one
		// too, wins over DefaultFieldSelector.
		cfg.Field = andNode(cmp.Or(typ.Field, opts.DefaultFieldSelector), nodeSel)
		// A namespace's settings win over the type's: each gets the node's
		// selector with the one it would have had.
		cfg.Namespaces = eachPodNamespace(typ, opts, func(ns string, nsCfg cache.Config) cache.Config {
			sel, _ := inNamespace(ns, nsCfg, typ, opts)
			nsCfg.FieldSelector = andNode(sel, nodeSel)
			return nsCfg
		})
		byObject[key] = cfg
	}
	opts.ByObject = byObject
	return opts, nil
}

// andNode returns own and the node selector together, or the node
// selector alone when own selects everything.
func andNode(own, node fields.Selector) fields.Selector {
	if own == nil || own.Empty() {
		return node
	}
	return fields.AndSelectors(own, node)
}

// engineRunnable runs the engine and, while it runs, the pod event handler.
// A node agent's needs no leader election, a cluster-wide one's does.
type engineRunnable struct {
	engine   *deletion.Engine
	informer cache.Informer
	reader   client.Reader // the informer's cache
	opts     SetupOptions
	// leaderElected: only the replica holding the manager's lease runs it.
	leaderElected bool
}

var (
	_ manager.Runnable               = (*engineRunnable)(nil)
	_ manager.LeaderElectionRunnable = (*engineRunnable)(nil)
)

// NeedLeaderElection returns false for a node agent's engine (every node
// runs its own) and true for a cluster-wide one (one replica destroys).
func (r *engineRunnable) NeedLeaderElection() bool { return r.leaderElected }

// Start registers the pod event handler, runs the engine until ctx is done
// (or, with a LeaseFence, until the Lease is not renewed in time: see
// fenced), then removes the handler.
func (r *engineRunnable) Start(ctx context.Context) error {
	manager := ctx
	if r.opts.LeaseFence != nil {
		var stop func()
		ctx, stop = r.opts.LeaseFence.fence(ctx)
		defer stop()
	}
	h := &podHandler{engine: r.engine, filter: r.opts.Filter, log: r.opts.Logger, reader: r.reader}
	if s, ok := r.informer.(interface{ GetStore() toolscache.Store }); ok {
		h.store = s.GetStore() // a client-go informer's, as a cache of one namespace or all hands out
	}
	reg, err := r.informer.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("k8s: adding the pod event handler: %w", err)
	}
	defer func() {
		if err := r.informer.RemoveEventHandler(reg); err != nil {
			r.opts.Logger.Error(err, "removing the pod event handler failed")
		}
	}()
	// The engine starts once the handler has been handed every pod of the
	// cache (the manager starts Runnables once its cache has synced, so
	// this is the time the handler takes): the live pods' PUs are tracked
	// before the engine lists its Inventory and runs its first check. Were
	// it otherwise, the PU of a pod deleted meanwhile could be restored
	// from the Inventory and destroyed, and then tracked again from the
	// pod's late add, and destroyed a second time.
	if !handlerSynced(ctx, reg) {
		return r.fenced(manager, ctx)
	}
	if err := r.engine.Start(ctx); err != nil {
		return err
	}
	return r.fenced(manager, ctx)
}

// fenced returns the cause of ctx's end when a LeaseFence ended it, once
// the manager stops (its elector gives up the lead by then, or within its
// client's timeout) or a renew deadline and a retry period later: an error
// of a Runnable that stops the manager while its elector gives up the lead
// races with it (controller-runtime v0.25.2's OnStoppedLeading writes the
// manager's gracefulShutdownTimeout as its stop procedure reads it).
func (r *engineRunnable) fenced(manager, ctx context.Context) error {
	err := context.Cause(ctx)
	if !errors.Is(err, ErrLeaseNotRenewed) {
		return nil
	}
	t := time.NewTimer(r.opts.LeaseFence.hold)
	defer t.Stop()
	select {
	case <-manager.Done():
		return nil // the manager stops: leader election lost
	case <-t.C:
		return err
	}
}

// handlerSynced waits until every pod of the informer's initial list has
// been delivered to the handler of reg, and reports whether it was before
// ctx ended.
func handlerSynced(ctx context.Context, reg toolscache.ResourceEventHandlerRegistration) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !reg.HasSynced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// tracker is the part of the engine the handler uses.
type tracker interface {
	Track(ports.PU) error
	TriggerPod(types.NamespacedName)
	Classify(*corev1.Pod) deletion.PodClass
}

// podHandler turns pod events into Track and TriggerPod calls. Which pods
// it tracks the engine says (Classify): those bound to its node, or every
// pod for an engine without one. It does no I/O of its own: the informer's
// delivery goroutine is never held longer than Track and TriggerPod take.
type podHandler struct {
	engine tracker
	filter func(*corev1.Pod) bool // nil: every pod
	log    logr.Logger
	// store is the informer's store, which the informer updates before it
	// hands the handler the event (see stale); nil: reader, the cache, is
	// asked instead (a cache of several namespaces has one informer each).
	store  toolscache.Store
	reader client.Reader // nil with a nil store: neither is asked
}

var _ toolscache.ResourceEventHandler = (*podHandler)(nil)

// pod returns obj as a pod and how the engine classifies it; an object
// that is not a pod is logged.
func (h *podHandler) pod(obj any) (*corev1.Pod, deletion.PodClass, bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		h.log.Error(nil, "pod informer sent an object that is not a pod", "type", fmt.Sprintf("%T", obj))
		return nil, deletion.PodElsewhere, false
	}
	return pod, h.engine.Classify(pod), true
}

// accepts reports whether the filter accepts pod; a filter that panics
// rejects it, and the panic is logged.
func (h *podHandler) accepts(pod *corev1.Pod) (ok bool) {
	if h.filter == nil {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			h.log.Error(fmt.Errorf("%w: Filter: %s", deletion.ErrPortPanicked, ports.Sprint(r)), "the pod filter panicked; the pod is not tracked",
				"pod", pod.Namespace+"/"+pod.Name)
			ok = false
		}
	}()
	return h.filter(pod)
}

// stale reports whether the informer's store no longer holds pod, deleted
// or replaced by a pod of another UID since the event the handler is
// handling. The store runs ahead of the handler, whose events wait in a
// buffer of their own: the engine's checks, reading the same store, may
// have found the pod gone and destroyed its PU already, and tracking it
// again from the late event would destroy it a second time.
//
// It decides on evidence only: a store or a cache that says the pod is not
// there, or holds a pod of another UID. An answer that cannot tell (an
// error, an object that is not a pod, a pod without a UID, as
// controller-runtime's fake cache answers every Get) is not stale.
func (h *podHandler) stale(pod *corev1.Pod) bool {
	switch {
	case h.store != nil:
		obj, ok, err := h.store.GetByKey(pod.Namespace + "/" + pod.Name)
		if err != nil || !ok {
			return err == nil
		}
		cur, isPod := obj.(*corev1.Pod)
		return isPod && replacedBy(pod, cur)
	case h.reader != nil:
		// The cache has synced (the engine starts after it), so this reads
		// memory; the deadline only bounds a cache that stopped meanwhile.
		ctx, cancel := context.WithTimeout(context.Background(), cacheReadWait)
		defer cancel()
		var cur corev1.Pod
		err := h.reader.Get(ctx, client.ObjectKeyFromObject(pod), &cur)
		return apierrors.IsNotFound(err) || err == nil && replacedBy(pod, &cur)
	}
	return false
}

// replacedBy reports whether cur, read under pod's name, is another pod:
// one with a UID that is not pod's. A pod without a UID is no pod the API
// server made, and says nothing.
func replacedBy(pod, cur *corev1.Pod) bool {
	return cur.UID != "" && cur.UID != pod.UID
}

// cacheReadWait bounds the handler's read of a cache of several namespaces.
const cacheReadWait = time.Second

// OnAdd tracks pod if it is bound to the engine's node and the filter
// accepts it, and triggers its first check, which records its sandbox. A
// finished pod is tracked too: a PU the agent made for it before it
// finished is destroyed by that check when the engine destroys the PUs of
// finished pods (row 11).
func (h *podHandler) OnAdd(obj any, _ bool) {
	pod, class, ok := h.pod(obj)
	if !ok || class == deletion.PodElsewhere || !h.accepts(pod) {
		return
	}
	h.track(pod)
	h.engine.TriggerPod(client.ObjectKeyFromObject(pod))
}

// OnUpdate tracks the new pod if it is bound to the engine's node and the
// filter accepts it, and triggers a check when the pod changed (its sandbox
// may have been replaced) or was replaced (another UID, seen after a
// relist). A resync, which changes nothing, triggers nothing. A pod the
// engine classifies as finished is not tracked again: its PU is destroyed,
// or will be at the check its add triggered, and tracking it anew would
// destroy it once more at each later update (its deletion included).
// A pod replaced by one the handler does not track (elsewhere: on another
// node or not yet scheduled; or one the filter rejects) triggers a check
// too: the old pod of that name may have had a PU, and the engine decides.
func (h *podHandler) OnUpdate(oldObj, newObj any) {
	pod, class, ok := h.pod(newObj)
	if !ok {
		return
	}
	old, _ := oldObj.(*corev1.Pod)
	replaced := old != nil && old.UID != pod.UID
	if class == deletion.PodElsewhere || !h.accepts(pod) {
		if replaced {
			h.engine.TriggerPod(client.ObjectKeyFromObject(pod))
		}
		return
	}
	if replaced || class != deletion.PodFinished {
		h.track(pod)
	}
	if replaced || old == nil || old.ResourceVersion != pod.ResourceVersion {
		h.engine.TriggerPod(client.ObjectKeyFromObject(pod))
	}
}

// OnDelete triggers a check of the pod's PUs; the check reads the pod, finds
// it gone and destroys them.
func (h *podHandler) OnDelete(obj any) {
	switch o := obj.(type) {
	case *corev1.Pod:
		h.engine.TriggerPod(client.ObjectKeyFromObject(o))
	case toolscache.DeletedFinalStateUnknown:
		if pod, ok := o.Obj.(*corev1.Pod); ok {
			h.engine.TriggerPod(client.ObjectKeyFromObject(pod))
			return
		}
		ns, name, err := toolscache.SplitMetaNamespaceKey(o.Key)
		if err != nil || name == "" {
			h.log.Error(err, "pod tombstone with an unusable key", "key", o.Key)
			return
		}
		h.engine.TriggerPod(types.NamespacedName{Namespace: ns, Name: name})
	default:
		h.log.Error(nil, "pod informer sent an object that is not a pod", "type", fmt.Sprintf("%T", obj))
	}
}

// track tracks pod's PU without a sandbox: the engine records the sandbox
// at its first check. A pod the informer's store no longer holds is not
// tracked (stale).
func (h *podHandler) track(pod *corev1.Pod) {
	pu := ports.PU{PUID: string(pod.UID), Pod: client.ObjectKeyFromObject(pod)}
	if h.stale(pod) {
		h.log.V(1).Info("pod event older than the cache: the pod is gone or replaced; not tracked", "pod", pu.Pod.String(), "puID", pu.PUID)
		return
	}
	if err := h.engine.Track(pu); err != nil {
		h.log.Error(err, "tracking pod failed", "pod", pu.Pod.String(), "puID", pu.PUID)
	}
}
