// docs:begin first-agent-agent

package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Agent creates a PU in its Firewall for each pod that starts on its node,
// and leaves the PU's destruction to the deletion engine.
type Agent struct {
	firewall *Firewall
	engine   *deletion.Engine
}

// NewAgent returns the agent of node, whose engine reads pods through pods
// (the agent's cache of the API server's pods) and destroys PUs through
// firewall. opts are the engine's further options; NodeName is node.
func NewAgent(pods ports.PodGetter, firewall *Firewall, node string, opts deletion.Options) (*Agent, error) {
	opts.NodeName = node
	engine, err := deletion.New(pods, firewall, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the deletion engine: %w", err)
	}
	return &Agent{firewall: firewall, engine: engine}, nil
}

// Run checks every PU until ctx is done: each one every SweepInterval (5s
// by default), and a pod's at once when PodDeleted asks.
func (a *Agent) Run(ctx context.Context) error { return a.engine.Start(ctx) }

// PodStarted creates the PU of pod, whose UID is its PUID, and has the
// engine remember it. Track returns an error only for a PU without a PUID,
// pod name or namespace, or once Run has stopped.
func (a *Agent) PodStarted(pod *corev1.Pod) error {
	pu := ports.PU{PUID: string(pod.UID), Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}}
	a.firewall.Create(pu, "allow ingress from namespace "+pod.Namespace)
	return a.engine.Track(pu)
}

// PodDeleted has the engine check the PUs of the pod now. It destroys each
// once the API server confirms that its pod is gone; a delete event the
// agent misses costs a SweepInterval, not a leak.
func (a *Agent) PodDeleted(key types.NamespacedName) { a.engine.TriggerPod(key) }

// docs:end first-agent-agent
