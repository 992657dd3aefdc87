// Command valuesdoc writes the values reference of each program's Helm
// chart, docs/operating/values/<program>.md, from the chart's values.yaml:
// every value, its default and the comment above it (or above the group it
// belongs to). A value without a comment, its own or its group's, is an
// error: the chart's values.yaml is where a value is documented, and the
// reference only lays it out. Its test fails when a reference is stale.
//
//	go run ./hack/valuesdoc            # every chart under examples/*/chart
//	go run ./hack/valuesdoc -check     # exit 1 if a reference is stale
package main
