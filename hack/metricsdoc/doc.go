// Command metricsdoc writes docs/metrics.md, the reference of every metric
// the deployable programs (examples/node-agent, examples/cluster-controller
// and examples/cni-gc) export, from the code that exports them.
//
// It registers k8s.NewMetrics on a fresh Prometheus registry and
// k8s.NewBacklogCollector, over a real engine that is never started, on
// another, gathers both and writes each metric's name, type, unit, labels
// (with their values where they are a fixed set), help text and buckets as
// the registries report them. Only two things are written here by hand,
// each in a table keyed by what the code exports: one line per metric on
// when to look at it (guides, keyed by the adapters/k8s Metric* constants)
// and the values of each label (labels). The command fails, and writes
// nothing, when a metric exported has no line in guides, when guides names a
// metric no longer exported, or when a label has no entry in labels.
//
// Usage, from the repository's root (make metrics-doc, which make generate
// runs):
//
//	go run ./hack/metricsdoc -o docs/metrics.md
//
// Its test fails when docs/metrics.md differs from what the command writes.
package main
