//go:build tools

// Package tools pins runc for the tests' container node, built with
// `-tags seccomp` against a static libseccomp (the kubelet asks for the
// RuntimeDefault seccomp profile on every sandbox, which containerd
// refuses when runc has no seccomp). Build it with `make containerd`; see
// ../README.md.
package tools

import _ "github.com/opencontainers/runc"
