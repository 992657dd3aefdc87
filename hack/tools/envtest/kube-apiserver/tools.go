//go:build tools

// Package tools pins k8s.io/kubernetes/cmd/kube-apiserver and
// k8s.io/kubernetes/cmd/kubelet in this module so `go mod tidy` keeps their
// dependencies. Build them with
//
//	go build -o <dir>/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
//	go build -o <dir>/kubelet k8s.io/kubernetes/cmd/kubelet
//
// See ../README.md.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
