//go:build tools

// Package tools pins promtool, which the tests check the charts' alerting
// rules with (promtool test rules), in a module of its own so that the
// SDK's go.mod never requires Prometheus.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
