package testkube

import (
	_ "embed"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// prometheusRuleCRD is prometheus-operator's PrometheusRule CRD (its
// version is in the file's first comment), the kind of the charts'
// alerting rules.
//
//go:embed crds/monitoring.coreos.com_prometheusrules.yaml
var prometheusRuleCRD []byte

// InstallPrometheusRuleCRD installs prometheus-operator's PrometheusRule
// CRD in the API server of cfg and waits until it serves the kind, so that
// a chart's PrometheusRule can be sent to it (DryRunApply).
func InstallPrometheusRuleCRD(t testing.TB, cfg *rest.Config) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(prometheusRuleCRD, crd))
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	require.NoError(t, err)
}
