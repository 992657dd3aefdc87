//go:build tools

// Package tools pins the CNI reference plugins the tests of adapters/cni
// run for real (bridge, host-local, loopback, and portmap, which with bridge's
// ipMasq calls iptables on DEL), in a module of their own so
// that the root module never requires them. Build them with
//
//	go build -o <dir>/ github.com/containernetworking/plugins/plugins/main/bridge \
//		github.com/containernetworking/plugins/plugins/ipam/host-local \
//		github.com/containernetworking/plugins/plugins/main/loopback \
//		github.com/containernetworking/plugins/plugins/meta/portmap
//
// or `make cni-plugins`. See ../envtest/README.md for the pattern.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
