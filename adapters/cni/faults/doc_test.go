// Package faults_test holds the CNI collector's tests of directories and a
// Runtime that answer nonsense or hang: data directories that are files,
// named pipes among a network's plugin configs, a Runtime that ignores its
// context, an unusable cache entry, a data directory written otherwise.
// The collector keeps what it cannot read, and goes on.
package faults_test
