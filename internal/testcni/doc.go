// Package testcni is what the CNI collector's external test packages
// (adapters/cni/...) share: where the real CNI plugins are, files as
// host-local and a conflist of it write them, a Tracker that tracks
// nothing, a logger that says nothing, the address page read, and a
// Resync run until a condition holds.
//
// Each helper does what the copies it replaced did; what differs between
// packages is a parameter, or stays in the package.
package testcni
