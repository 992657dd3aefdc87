package k8s_test

import (
	"context"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func podSelector(t *testing.T, opts cache.Options) cache.ByObject {
	t.Helper()
	for obj, cfg := range opts.ByObject {
		if _, ok := obj.(*corev1.Pod); ok {
			return cfg
		}
	}
	t.Fatal("no pod entry in ByObject")
	return cache.ByObject{}
}

func TestNodeCacheOptionsSelectsTheNode(t *testing.T) {
	opts, err := k8s.NodeCacheOptions("node-a", cache.Options{})
	require.NoError(t, err)
	require.Len(t, opts.ByObject, 1)
	sel := podSelector(t, opts).Field
	assert.Equal(t, "spec.nodeName=node-a", sel.String())
	assert.True(t, sel.Matches(fields.Set{"spec.nodeName": "node-a"}))
	assert.False(t, sel.Matches(fields.Set{"spec.nodeName": "node-b"}))
	assert.False(t, sel.Matches(fields.Set{"spec.nodeName": ""}), "pods not bound yet are not cached")
}

func TestNodeCacheOptionsKeepsTheCallersSettings(t *testing.T) {
	pods := &corev1.Pod{}
	nodes := &corev1.Node{}
	in := cache.Options{
		DefaultLabelSelector: labels.Everything(),
		ByObject: map[client.Object]cache.ByObject{
			pods:  {Field: fields.OneTermNotEqualSelector("status.phase", "Pending"), Label: labels.SelectorFromSet(labels.Set{"app": "x"})},
			nodes: {Label: labels.SelectorFromSet(labels.Set{"role": "w"})},
		},
	}
	out, err := k8s.NodeCacheOptions("node-a", in)
	require.NoError(t, err)
	require.Len(t, out.ByObject, 2)
	assert.Equal(t, "role=w", out.ByObject[nodes].Label.String())
	assert.Equal(t, "app=x", out.ByObject[pods].Label.String())
	sel := out.ByObject[pods].Field
	assert.True(t, sel.Matches(fields.Set{"spec.nodeName": "node-a", "status.phase": "Running"}))
	assert.False(t, sel.Matches(fields.Set{"spec.nodeName": "node-a", "status.phase": "Pending"}))
	assert.False(t, sel.Matches(fields.Set{"spec.nodeName": "node-b", "status.phase": "Running"}))
	assert.NotNil(t, out.DefaultLabelSelector)
	// The caller's map is not changed.
	assert.Equal(t, "status.phase!=Pending", in.ByObject[pods].Field.String())
}

func TestNodeCacheOptionsRefusesAnEmptyNode(t *testing.T) {
	_, err := k8s.NodeCacheOptions("", cache.Options{})
	require.ErrorIs(t, err, k8s.ErrInvalidSetup)
}

func TestSetupWithManagerRefusesBadInput(t *testing.T) {
	// The manager is never started, so its API server need not exist.
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	require.NoError(t, err)
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	c, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{NodeName: "n"})
	require.NoError(t, err)
	// The node is read from the engine: an engine without one cannot be
	// wired, for the wiring would not know which pods to track.
	noNode, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{})
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		call func() error
		want string
	}{
		"nil manager":    {func() error { return k8s.SetupWithManager(nil, c, k8s.SetupOptions{}) }, "manager is nil"},
		"nil engine":     {func() error { return k8s.SetupWithManager(mgr, nil, k8s.SetupOptions{}) }, "deletion engine is nil"},
		"engine no node": {func() error { return k8s.SetupWithManager(mgr, noNode, k8s.SetupOptions{}) }, "deletion.Options.NodeName"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, k8s.ErrInvalidSetup)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestSetupClusterWithManagerRefusesBadInput(t *testing.T) {
	// The manager is never started, so its API server need not exist.
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	require.NoError(t, err)
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	c, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{})
	require.NoError(t, err)
	// A cluster-wide engine with a node would destroy, for NodeChanged,
	// the PU of every pod bound to another node.
	withNode, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{NodeName: "n"})
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		call func() error
		want string
	}{
		"nil manager":      {func() error { return k8s.SetupClusterWithManager(nil, c, k8s.SetupOptions{}) }, "manager is nil"},
		"nil engine":       {func() error { return k8s.SetupClusterWithManager(mgr, nil, k8s.SetupOptions{}) }, "deletion engine is nil"},
		"engine of a node": {func() error { return k8s.SetupClusterWithManager(mgr, withNode, k8s.SetupOptions{}) }, "has a node"},
		"nil health check": {func() error { return k8s.LeaderReadinessCheck(nil, c)(nil) }, "needs a manager"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, k8s.ErrInvalidSetup)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
