package k8s_test

import (
	"context"
	"log"
	"os"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// A node agent wires the engine into its controller-runtime manager: a pod
// cache scoped to the node, the engine reading pods from it and confirming
// each destroy against the API server, metrics and the status page on the
// manager's authenticated metrics server, the engine's health on /healthz
// and /readyz, and the main pod controller reconciling the pods the engine
// requeues. It needs a cluster, so it is compiled, not run; the envtest
// scenarios run the same wiring against a real API server, and
// examples/node-agent is the whole agent. Its cache keeps full pods: its
// main controller and its extractor read the same cache, and more of each
// pod than SlimPod keeps.
func ExampleSetupWithManager() {
	node := os.Getenv("NODE_NAME") // from the downward API
	ctrl.SetLogger(zap.New())
	logger := ctrl.Log.WithName("podsweeper")

	// The pod cache holds the node's pods only.
	cacheOpts, err := k8s.NodeCacheOptions(node, cache.Options{})
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Cache: cacheOpts,
		Metrics: metricsserver.Options{
			BindAddress:    ":8443",
			SecureServing:  true,
			FilterProvider: filters.WithAuthenticationAndAuthorization,
		},
		HealthProbeBindAddress: ":8081",
	})
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := k8s.NewMetrics(nil) // podsweeper_* on the manager's /metrics
	if err != nil {
		log.Fatal(err)
	}

	// The ports of the agent's policy engine and container runtime.
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		logger.Info("destroy", "event", ev) // tear down ev.PUID; an unknown PU is no error
		return nil
	})
	sandboxes := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
		return pod.Annotations["example.com/sandbox-id"], nil // adapters/cri asks the runtime
	})
	requeue := make(chan event.GenericEvent)

	// The engine's Options are the one place the node and the extractor
	// are given: SetupWithManager reads them from the engine.
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{
		NodeName:         node,
		SandboxExtractor: sandboxes,
		Requeuer:         k8s.NewChannelRequeuer(requeue),
		// The cache may lag or filter: every destroy is confirmed with a
		// direct read of the API server first.
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		Observer:  metrics,
		Logger:    logger,
	})
	if err != nil {
		log.Fatal(err)
	}
	// How far behind the destroys are, and why each PU is kept.
	if err := ctrlmetrics.Registry.Register(k8s.NewBacklogCollector(engine)); err != nil {
		log.Fatal(err)
	}
	if err := mgr.AddMetricsServerExtraHandler(k8s.StatusPath, k8s.NewStatusHandler(engine)); err != nil {
		log.Fatal(err)
	}
	if err := mgr.AddHealthzCheck("podsweeper", engine.LivenessCheck); err != nil {
		log.Fatal(err)
	}
	if err := mgr.AddReadyzCheck("podsweeper", engine.ReadinessCheck); err != nil {
		log.Fatal(err)
	}
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{
		// The policy engine creates no PU for host-network and mirror pods.
		Filter: k8s.PodsWithOwnNetwork,
		Logger: logger,
	}); err != nil {
		log.Fatal(err)
	}

	// The main pod controller, which creates PUs, also reconciles the pods
	// whose sandbox was replaced.
	createPUs := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil // create the PU of the pod's current sandbox, engine.Track it
	})
	err = ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}).
		WatchesRawSource(source.Channel(requeue, &handler.EnqueueRequestForObject{})).
		Complete(createPUs)
	if err != nil {
		log.Fatal(err)
	}

	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Fatal(err)
	}
}

// A central controller holds a PU per pod of the whole cluster outside the
// nodes (here, one DNS record per pod) and runs as a Deployment of two or
// more replicas: the manager elects a leader, and only the replica that
// holds the Lease runs the engine, which has no node and lists the
// external system's PUs before its first check, so that those of the pods
// deleted during a failover go too. It needs a cluster, so it is compiled,
// not run; examples/cluster-controller is the whole controller.
func ExampleSetupClusterWithManager() {
	ctrl.SetLogger(zap.New())
	logger := ctrl.Log.WithName("podsweeper")
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		HealthProbeBindAddress:  ":8081",
		LeaderElection:          true, // required: without it every replica destroys every PU
		LeaderElectionID:        "dns-records-podsweeper",
		LeaderElectionNamespace: os.Getenv("POD_NAMESPACE"),
		// The Lease is released once the engine has returned, so that a
		// rollout hands over at once.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := k8s.NewMetrics(nil)
	if err != nil {
		log.Fatal(err)
	}

	// The external system. Deleting a record already gone must succeed:
	// the next leader may delete one this replica deleted.
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		logger.Info("delete DNS record", "puID", ev.PUID, "pod", ev.Pod)
		return nil
	})
	inventory := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
		return nil, nil // every record the DNS zone holds, with its pod
	})

	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{
		// No NodeName: every pod of the cluster, on any node.
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		Inventory: inventory,
		Observer:  metrics,
		Logger:    logger,
	})
	if err != nil {
		log.Fatal(err)
	}
	// A standby is healthy without running the engine.
	if err := mgr.AddHealthzCheck("podsweeper", k8s.LeaderLivenessCheck(mgr, engine)); err != nil {
		log.Fatal(err)
	}
	if err := mgr.AddReadyzCheck("podsweeper", k8s.LeaderReadinessCheck(mgr, engine)); err != nil {
		log.Fatal(err)
	}
	if err := k8s.SetupClusterWithManager(mgr, engine, k8s.SetupOptions{Logger: logger}); err != nil {
		log.Fatal(err)
	}

	// On a lost Lease, Start returns an error at once: the process exits.
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Fatal(err)
	}
}
