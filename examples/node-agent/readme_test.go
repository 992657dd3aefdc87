package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// readmeUse is README.md's "Use" snippet, compiled with the SDK's current
// API: TestREADMEUseIsCompiled keeps the two the same, line for line.
func readmeUse(ctx context.Context, cfg *rest.Config, node string, destroyPU func(context.Context, string) error) error {
	// README:begin
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
	// The pod's sandbox, from the container runtime over the CRI.
	extractor, err := cri.New("unix:///run/containerd/containerd.sock", cri.Options{})
	if err != nil {
		return err
	}
	defer extractor.Close()
	metrics, err := k8s.NewMetrics(nil) // podsweeper_* on the manager's /metrics
	if err != nil {
		return err
	}
	engine, err := deletion.New(
		k8s.NewPodGetter(mgr.GetCache()), // checks read the node's pod cache
		ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			return destroyPU(ctx, ev.PUID) // your code: tear down the PU; an unknown PU is no error
		}),
		deletion.Options{
			NodeName:         node,
			SandboxExtractor: extractor,
			Confirmer:        k8s.NewPodGetter(mgr.GetAPIReader()), // a destroy is confirmed against the API server
			Observer:         metrics,
			Logger:           log,
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
	// README:end
}

var _ = readmeUse // compiled, not run: it needs a cluster and a runtime

// TestREADMEUseIsCompiled: the snippet README.md shows under "Use" is the
// body of readmeUse, which compiles against the SDK's current API.
func TestREADMEUseIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "## Use\n\n```go\n")
	require.True(t, ok, "README.md has a Use section with a Go block")
	shown, _, ok := strings.Cut(after, "```\n")
	require.True(t, ok)

	self, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	_, after, ok = strings.Cut(string(self), "\t// README:begin\n")
	require.True(t, ok)
	compiled, _, ok := strings.Cut(after, "\t// README:end\n")
	require.True(t, ok)
	var lines []string
	for line := range strings.Lines(compiled) {
		lines = append(lines, strings.TrimPrefix(line, "\t"))
	}
	require.Equal(t, shown, strings.Join(lines, ""), "README.md's Use snippet differs from readmeUse in examples/node-agent/readme_test.go")
}
