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

// prometheusRuleCRD and serviceMonitorCRD are prometheus-operator's
// PrometheusRule and ServiceMonitor CRDs (their version is in each file's
// first comment), the kinds of the charts' alerting rules and scrape.
//
//go:embed crds/monitoring.coreos.com_prometheusrules.yaml
var prometheusRuleCRD []byte

//go:embed crds/monitoring.coreos.com_servicemonitors.yaml
var serviceMonitorCRD []byte

// InstallPrometheusOperatorCRDs installs prometheus-operator's
// PrometheusRule and ServiceMonitor CRDs in the API server of cfg and waits
// until it serves the kinds, so that a chart's PrometheusRule and
// ServiceMonitor can be sent to it (DryRunApply).
func InstallPrometheusOperatorCRDs(t testing.TB, cfg *rest.Config) {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, b := range [][]byte{prometheusRuleCRD, serviceMonitorCRD} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(b, crd))
		crds = append(crds, crd)
	}
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds})
	require.NoError(t, err)
}
