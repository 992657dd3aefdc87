// Package testkube holds what the examples' tests against a real API server
// share: starting kube-apiserver and etcd through envtest (skipped without
// them, failed under CI=true), creating the objects of a deploy/ directory,
// a kubeconfig that impersonates a ServiceAccount, rendering the charts
// and kustomize bases and checking their alerting rules (with promtool)
// and dashboards (against a running program's /metrics), and small helpers
// for reading a process's HTTP endpoints and logs. It is for tests only.
package testkube
