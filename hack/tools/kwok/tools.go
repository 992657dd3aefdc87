//go:build tools

// Package tools pins KWOK, whose controller makes the scale benchmark's fake
// nodes Ready and their pods Running on a real API server, in a module of its
// own so that the SDK's go.mod never requires it.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
