// Package testcni is what the CNI collector's external test packages
// (adapters/cni/...) share: where the real CNI plugins are, host-local's
// reservation files and a conflist of host-local itself, where libcni
// caches an attachment and a file written and dated, a fake CRI runtime,
// a Tracker that tracks nothing and one that records, a logger that says
// nothing, the address page read, and a Resync run until a condition
// holds.
//
// Each helper does what the copies it replaced did; what differs between
// packages is a parameter, or stays in the package.
package testcni
