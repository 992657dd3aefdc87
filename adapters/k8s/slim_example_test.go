package k8s_test

import (
	"context"
	"fmt"
	"log"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// A node agent in which podsweeper is the only reader of pods keeps them
// slim: its cache holds the node's pods, each with only what podsweeper
// reads, and every check reads one without a deep copy. The cluster-wide
// mode does the same without NodeCacheOptions:
// ctrl.Options{Cache: k8s.SlimPodCacheOptions(cache.Options{})}.
func ExampleSlimPodCacheOptions() {
	node := os.Getenv("NODE_NAME")
	cacheOpts, err := k8s.NodeCacheOptions(node, cache.Options{})
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Cache: k8s.SlimPodCacheOptions(cacheOpts)})
	if err != nil {
		log.Fatal(err)
	}
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error { return nil })
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{
		NodeName:  node,
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
	})
	if err != nil {
		log.Fatal(err)
	}
	// PodsWithOwnNetwork reads only what a slim pod keeps.
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{Filter: k8s.PodsWithOwnNetwork}); err != nil {
		log.Fatal(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Fatal(err)
	}
}

// An agent whose other controllers read full pods through the manager's
// cache gives podsweeper a slim cache of its own: built from the manager's
// config, scheme, mapper and HTTP client, added to the manager, read by
// the engine and watched by the wiring. Each pod is then held twice, once
// full and once slim (about 1.5 KB more per pod).
func ExampleSetupOptions_cache() {
	node := os.Getenv("NODE_NAME")
	mgrCache, err := k8s.NodeCacheOptions(node, cache.Options{})
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Cache: mgrCache}) // full pods
	if err != nil {
		log.Fatal(err)
	}
	own, err := k8s.NodeCacheOptions(node, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
	})
	if err != nil {
		log.Fatal(err)
	}
	podCache, err := cache.New(mgr.GetConfig(), k8s.SlimPodCacheOptions(own))
	if err != nil {
		log.Fatal(err)
	}
	if err := mgr.Add(podCache); err != nil { // started and stopped with the manager
		log.Fatal(err)
	}
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error { return nil })
	engine, err := deletion.New(k8s.NewPodGetter(podCache), policy, deletion.Options{
		NodeName:  node,
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{Cache: podCache, Filter: k8s.PodsWithOwnNetwork}); err != nil {
		log.Fatal(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Fatal(err)
	}
}

// An agent whose other readers of the same cache need a pod's labels, a
// network-policy agent selecting pods say, keeps them beside SlimPod's
// fields with a transform of its own.
func ExampleSlimPod_keepLabels() {
	keepLabels := func(obj any) (any, error) {
		full, isPod := obj.(*corev1.Pod)
		slim, err := k8s.SlimPod(obj)
		if isPod && full != nil && err == nil {
			slim.(*corev1.Pod).Labels = full.Labels
		}
		return slim, err
	}
	cacheOpts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Transform: keepLabels, UnsafeDisableDeepCopy: ptr.To(true)},
	}}
	_ = cacheOpts // ctrl.Options{Cache: cacheOpts}, through NodeCacheOptions for a node agent

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "u-1", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "worker-3", Containers: []corev1.Container{{Name: "app", Image: "web:1"}}},
	}
	obj, _ := keepLabels(pod)
	kept := obj.(*corev1.Pod)
	fmt.Println(kept.Name, kept.Spec.NodeName, kept.Labels, len(kept.Spec.Containers))
	// Output: web-0 worker-3 map[app:web] 0
}
