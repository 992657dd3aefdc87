// Package agent is the node agent of examples/node-agent as a library:
// its command line (ParseFlags), its journal, its runtime and its
// assembly (Run), with the PolicyHandler given in Options. The template's
// main package is Main with a PolicyHandler that logs each PU; an agent of
// your own is Main with yours, built into its own image with
// `make image PROGRAM=node-agent MODULE=<your module>` (see
// docs/sdk/first-agent.md) and installed with the template's chart.
//
//	func main() {
//		agent.Main(agent.Options{Policy: func(log logr.Logger) ports.PolicyHandler { return myPolicy{log} }})
//	}
package agent
