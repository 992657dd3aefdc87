package k8s_test

import (
	"context"
	"log"
	"os"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// A node agent wires the engine into its controller-runtime manager: a pod
// cache scoped to the node, the engine reading pods from it and confirming
// each destroy against the API server, metrics on the manager's /metrics,
// the engine's health on /healthz, and the main pod controller reconciling
// the pods the engine requeues. It needs a cluster, so it is compiled, not run; the
// envtest scenarios run the same wiring against a real API server.
func ExampleSetupWithManager() {
	node := os.Getenv("NODE_NAME")
	cacheOpts, err := k8s.NodeCacheOptions(node, cache.Options{})
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := manager.New(config.GetConfigOrDie(), manager.Options{Cache: cacheOpts})
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := k8s.NewMetrics(nil) // controller-runtime's registry, served on /metrics
	if err != nil {
		log.Fatal(err)
	}

	// The ports of the node agent's policy engine and container runtime.
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		log.Println(ev) // destroy ev.PUID in the policy engine
		return nil
	})
	sandbox := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
		return pod.Annotations["example.com/sandbox-id"], nil // ask the container runtime
	})
	requeue := make(chan event.GenericEvent)

	// The engine's Options are the one place the node and the extractor
	// are given: SetupWithManager reads them from the engine.
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{
		NodeName:         node,
		SandboxExtractor: sandbox,
		Requeuer:         k8s.NewChannelRequeuer(requeue),
		// The cache may lag or filter: every destroy is confirmed with a
		// direct read of the API server first.
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		Observer:  metrics,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := mgr.AddHealthzCheck("podsweeper", engine.HealthCheck); err != nil {
		log.Fatal(err)
	}
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{
		// The policy engine creates no PU for host-network and mirror pods.
		Filter: k8s.PodsWithOwnNetwork,
	}); err != nil {
		log.Fatal(err)
	}

	// The main pod controller, which creates PUs, also reconciles the pods
	// whose sandbox was replaced.
	createPUs := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil // create the PU of the pod's current sandbox
	})
	err = builder.ControllerManagedBy(mgr).
		For(&corev1.Pod{}).
		WatchesRawSource(source.Channel(requeue, &handler.EnqueueRequestForObject{})).
		Complete(createPUs)
	if err != nil {
		log.Fatal(err)
	}

	if err := mgr.Start(signals.SetupSignalHandler()); err != nil {
		log.Fatal(err)
	}
}
