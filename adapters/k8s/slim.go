package k8s

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/deletion"
)

var _ toolscache.TransformFunc = SlimPod

// SlimPod is a cache transform (cache.ByObject.Transform) that replaces
// each pod by a new one holding only what podsweeper reads of it, and
// passes any other object, tombstones (toolscache.DeletedFinalStateUnknown)
// included, through unchanged. It keeps:
//
//   - what the decision table reads, deletion.SlimPod: type, name,
//     namespace, UID, spec.nodeName and status.phase;
//   - what the pod handler of SetupWithManager reads: metadata.resourceVersion,
//     to tell a change from a resync;
//   - what PodsWithOwnNetwork reads: spec.hostNetwork and the mirror-pod
//     annotation (kubernetes.io/config.mirror), the only annotation kept;
//   - metadata.deletionTimestamp, so that whoever is handed the pod (a
//     Filter, the Requeuer's main controller) still sees it terminating.
//
// Everything else goes: labels, the other annotations, owner references,
// managed fields, containers, volumes, conditions and container statuses.
// The Deployment's pod of testdata/realistic-pod.json, 11.6 KB of JSON,
// holds about 31 KB of heap in a store once decoded, its slim copy about
// 1.5 KB, most of it the corev1.Pod struct itself (BenchmarkPodStore).
//
// A SetupOptions.Filter or SandboxExtractor that reads any other field sees
// it empty: PodsWithOwnNetwork and adapters/cri's extractor read only what
// is kept. FuzzSlimPodDecidesAlike checks that the decision table,
// Engine.Classify, PodsWithOwnNetwork and the handler answer alike on a pod
// and on its slim copy. SlimPod does not modify the pod it is given, and
// is idempotent, as client-go asks of a transform.
func SlimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		return obj, nil
	}
	slim := deletion.SlimPod(pod)
	slim.ResourceVersion = pod.ResourceVersion
	slim.DeletionTimestamp = pod.DeletionTimestamp.DeepCopy()
	slim.Spec.HostNetwork = pod.Spec.HostNetwork
	if v, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		slim.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: v}
	}
	return slim, nil
}

// SlimPodCacheOptions returns a copy of opts whose pod cache holds the slim
// pods of SlimPod and hands them out without deep copies
// (ByObject.UnsafeDisableDeepCopy): a realistic pod then holds about 1.5 KB
// of heap instead of about 31 KB (BenchmarkPodStore), and a read of it, one
// per check, takes about 2 µs and 1.35 KB instead of about 31 µs and 23.4
// KB (BenchmarkPodRead). It is opt-in, for a node agent (with
// NodeCacheOptions, applied in either order) and for a cluster-wide cache
// alike: pass the result as manager.Options.Cache, or to cache.New for a
// cache of podsweeper's own.
//
// EVERY READER OF THAT CACHE SEES SLIM PODS, not podsweeper's only: a
// network-policy agent that selects pods by label through the same manager
// finds none, a controller that reads containers or conditions reads them
// empty, and every Get or List of pods copies only the pod struct: its
// maps, slices and pointers are the cache's own, and must not be modified
// (DeepCopy the pod first). Use it where podsweeper is the only reader of
// pods in its manager's cache. An agent that needs more of its pods
// elsewhere either
//
//   - gives podsweeper a cache of its own, built with these options, and
//     leaves the manager's cache full (SetupOptions.Cache shows how): it
//     then holds a slim copy of each pod beside the full one; or
//   - keeps the fields its other readers need with a transform of its own
//     that calls SlimPod and copies them onto its result, set as
//     ByObject[&corev1.Pod{}].Transform with UnsafeDisableDeepCopy (see the
//     SlimPod example, which keeps the labels).
//
// A pod Transform already in opts (ByObject's, or opts.DefaultTransform
// when ByObject has none, and any namespace's of ByObject.Namespaces or
// DefaultNamespaces) is kept: it runs first, on the full pod it was written
// for, and SlimPod on its result, so TransformStripManagedFields or a
// transform that fixes a field up still apply, but nothing a transform adds
// outside SlimPod's fields survives. An error of that transform is wrapped
// with %w. Each namespace gets SlimPod after the transform
// controller-runtime would have given it (its own, the type's,
// DefaultNamespaces', DefaultTransform), and a pod entry keyed by another Go
// type of kind Pod gets the same as a *corev1.Pod's. The caller's maps are
// not changed.
func SlimPodCacheOptions(opts cache.Options) cache.Options {
	byObject, podKeys := podByObject(opts)
	for _, key := range podKeys {
		typ := byObject[key]
		cfg := typ
		transform := typ.Transform
		if transform == nil {
			transform = opts.DefaultTransform
		}
		cfg.Transform = slimAfter(transform)
		cfg.UnsafeDisableDeepCopy = ptr.To(true)
		// A namespace's settings win over the type's: each gets SlimPod
		// after the transform it would have run.
		cfg.Namespaces = eachPodNamespace(typ, opts, func(ns string, nsCfg cache.Config) cache.Config {
			_, transform := inNamespace(ns, nsCfg, typ, opts)
			nsCfg.Transform = slimAfter(transform)
			nsCfg.UnsafeDisableDeepCopy = ptr.To(true)
			return nsCfg
		})
		byObject[key] = cfg
	}
	opts.ByObject = byObject
	return opts
}

// slimAfter returns a transform that runs before, then SlimPod.
func slimAfter(before toolscache.TransformFunc) toolscache.TransformFunc {
	if before == nil {
		return SlimPod
	}
	return func(obj any) (any, error) {
		obj, err := before(obj)
		if err != nil {
			return nil, fmt.Errorf("k8s: the pod transform before SlimPod: %w", err)
		}
		return SlimPod(obj)
	}
}

// eachPodNamespace returns a new map of the pod type's settings by
// namespace, f applied to each: typ.Namespaces, or opts.DefaultNamespaces
// when it has none (the type's replace them for pods once set, so they are
// copied there). With neither it returns typ.Namespaces. A namespace's
// settings win over the type's in controller-runtime's defaulting: what
// SlimPodCacheOptions and NodeCacheOptions set on the type, they set on
// each namespace through f too.
func eachPodNamespace(typ cache.ByObject, opts cache.Options, f func(ns string, nsCfg cache.Config) cache.Config) map[string]cache.Config {
	namespaces := typ.Namespaces
	if namespaces == nil {
		namespaces = opts.DefaultNamespaces
	}
	if len(namespaces) == 0 {
		return typ.Namespaces
	}
	out := make(map[string]cache.Config, len(namespaces))
	for ns, nsCfg := range namespaces {
		out[ns] = f(ns, nsCfg)
	}
	return out
}

// inNamespace returns the field selector and the transform that
// controller-runtime's defaulting (cache.New) gives the pod type of
// settings typ in namespace ns, whose own settings are nsCfg: each from the
// first of nsCfg, typ, opts.DefaultNamespaces[ns] and opts' defaults that
// sets it.
func inNamespace(ns string, nsCfg cache.Config, typ cache.ByObject, opts cache.Options) (fields.Selector, toolscache.TransformFunc) {
	def := opts.DefaultNamespaces[ns]
	sel := cmp.Or(nsCfg.FieldSelector, typ.Field, def.FieldSelector, opts.DefaultFieldSelector)
	transform := nsCfg.Transform
	for _, t := range []toolscache.TransformFunc{typ.Transform, def.Transform, opts.DefaultTransform} {
		if transform == nil {
			transform = t
		}
	}
	return sel, transform
}

// podByObject returns a copy of opts.ByObject and the keys of its pod
// entries: every key of kind Pod, a *corev1.Pod or a PartialObjectMetadata
// or Unstructured whose kind is Pod (controller-runtime reads them all as
// the settings of pods), or a new *corev1.Pod key when there is none.
func podByObject(opts cache.Options) (map[client.Object]cache.ByObject, []client.Object) {
	byObject := make(map[client.Object]cache.ByObject, len(opts.ByObject)+1)
	var podKeys []client.Object
	for obj, cfg := range opts.ByObject {
		if isPodKind(obj) {
			podKeys = append(podKeys, obj)
		}
		byObject[obj] = cfg
	}
	if len(podKeys) == 0 {
		podKey := &corev1.Pod{}
		byObject[podKey] = cache.ByObject{}
		podKeys = append(podKeys, podKey)
	}
	return byObject, podKeys
}

// isPodKind reports whether obj stands for pods in cache.Options.ByObject.
func isPodKind(obj client.Object) bool {
	if _, ok := obj.(*corev1.Pod); ok {
		return true
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Pod"
}
