package main

import (
	"context"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// readmeUse is README.md's controller-runtime snippet, compiled with the
// SDK's current API; hack/docscheck keeps the two the same, line for line.
func readmeUse(ctx context.Context, cfg *rest.Config, node string, destroyPU func(context.Context, string) error) error {
	// docs:begin controller-runtime
	// A node agent on controller-runtime: the pod cache holds this node's pods only.
	log := ctrl.Log.WithName("podsweeper")
	cacheOpts, err := k8s.NodeCacheOptions(node, cache.Options{})
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: cacheOpts})
	if err != nil {
		return err
	}
	engine, err := deletion.New(
		k8s.NewPodGetter(mgr.GetCache()), // checks read the node's pod cache
		ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			return destroyPU(ctx, ev.PUID) // your code: tear down the PU; an unknown PU is no error
		}),
		deletion.Options{
			NodeName:  node,
			Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()), // a destroy is confirmed against the API server
			Logger:    log,
		},
	)
	if err != nil {
		return err
	}
	// Track every pod bound to the node, trigger a check at once on every delete.
	// The wiring asks the engine which pods are its node's: the node is given once.
	// Host-network and mirror pods get no PU from a network-policy agent: skip them.
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{Filter: k8s.PodsWithOwnNetwork, Logger: log}); err != nil {
		return err
	}
	// A backlog fails readiness only: restarting a busy agent starts its work over.
	if err := mgr.AddHealthzCheck("podsweeper", engine.LivenessCheck); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("podsweeper", engine.ReadinessCheck); err != nil {
		return err
	}
	return mgr.Start(ctx)
	// docs:end controller-runtime
}

var _ = readmeUse // compiled, not run: it needs a cluster and a runtime
