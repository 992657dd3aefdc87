package cni_test

import (
	"context"
	"log"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// One Collector is the engine's Inventory, PolicyHandler and Requeuer, and
// Resync feeds the engine while it runs. The engine needs a PodGetter (the
// node's pod cache), a Confirmer (a direct read of the API server) and the
// CRI SandboxExtractor (adapters/cri), so this is compiled, not run; the
// tests run the same wiring on the real plugins, and examples/cni-gc runs
// it as a DaemonSet.
func ExampleNew() {
	var getter, confirmer ports.PodGetter // adapters/k8s.NewPodGetter over the cache, and over mgr.GetAPIReader()
	var sandboxes ports.SandboxExtractor  // adapters/cri.New(criEndpoint, cri.Options{})

	// The runtime's directories: /var/lib/cni, /opt/cni/bin, /etc/cni/net.d.
	collector, err := cni.New(cni.Options{})
	if err != nil {
		log.Fatal(err) // a directory is missing: a mount forgotten
	}
	engine, err := deletion.New(getter, collector, deletion.Options{
		NodeName:         "node-a",
		SandboxExtractor: sandboxes,
		Confirmer:        confirmer,
		Inventory:        collector, // the cache, listed at start
		Requeuer:         collector, // after a sandbox change, the pod's next sandbox at once
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	go func() { _ = collector.Resync(ctx, engine) }() // what appears while the agent runs
	_ = engine.Start(ctx)
}
