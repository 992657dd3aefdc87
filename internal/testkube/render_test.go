package testkube

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DryRunApply has the API server check each field of a render strictly: an unknown field fails (the API server's
// default, when a client names no field validation, only warns, and a chart's misspelt key would pass).
func TestDryRunApplyRejectsAnUnknownField(t *testing.T) {
	cfg, _ := StartAPIServer(t)
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	sa := func(name string, extra map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": name, "namespace": "default"}}}
		for k, v := range extra {
			u.Object[k] = v
		}
		return u
	}
	require.NoError(t, c.Create(t.Context(), sa("whole", nil), dryRun...))
	require.ErrorContains(t, c.Create(t.Context(), sa("misspelt", map[string]any{"automountServiceAcountToken": false}), dryRun...),
		`unknown field "automountServiceAcountToken"`)
}
