//go:build tools

// Package tools pins k8s.io/kubernetes/cmd/kube-apiserver in this module so
// `go mod tidy` keeps its dependencies. Build it with
//
//	go build -o <dir>/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
//
// See ../README.md.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
