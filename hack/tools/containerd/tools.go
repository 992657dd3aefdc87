//go:build tools

// Package tools pins containerd (containerd, ctr, containerd-shim-runc-v2)
// for the tests' container node (internal/testcontainerd), in a module of
// its own so that the root module never requires it. runc and the pause
// image have modules of their own beside it (runc/, pause/): each is built
// with the dependencies its upstream tested. Build them with
// `make containerd`; see README.md.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
