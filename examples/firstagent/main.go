// docs:begin first-agent-main

package main

import (
	"github.com/go-logr/logr"

	"github.com/podsweeper/podsweeper/examples/node-agent/agent"
	"github.com/podsweeper/podsweeper/ports"
)

// main runs the shipped node agent with the Firewall as its PolicyHandler:
// the same command line, journal, runtime and assembly, so that the node
// agent's chart runs this program's image as it runs the template's.
func main() {
	agent.Main(agent.Options{Policy: func(logr.Logger) ports.PolicyHandler { return NewFirewall() }})
}

// docs:end first-agent-main
