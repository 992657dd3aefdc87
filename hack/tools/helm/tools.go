//go:build tools

// Package tools pins helm, which the tests render the examples' charts
// with, in a module of its own so that the SDK's go.mod never requires it.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
