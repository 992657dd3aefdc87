package k8s_test

import (
	"context"
	"log"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// A node agent records a Kubernetes Event for each destroy with the
// manager's events.k8s.io recorder, beside its metrics: kubectl describe
// pod shows a PU destroyed for its pod's new sandbox, kubectl describe node
// the PUs of the node's pods that are gone, and kubectl get events
// --field-selector reason=PUAbandoned the PUs the engine gave up on. The
// agent's identity needs create and patch on events.k8s.io events. It
// needs a cluster, so it is compiled, not run.
func ExampleNewEvents() {
	node := os.Getenv("NODE_NAME")
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := k8s.NewMetrics(nil)
	if err != nil {
		log.Fatal(err)
	}
	// The same node as the engine's: the Events of pods that are gone go on it.
	events, err := k8s.NewEvents(mgr.GetEventRecorder("podsweeper"), k8s.EventsOptions{NodeName: node})
	if err != nil {
		log.Fatal(err)
	}
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		return nil // tear down ev.PUID in the policy engine
	})
	engine, err := deletion.New(k8s.NewPodGetter(mgr.GetCache()), policy, deletion.Options{
		NodeName:  node,
		Confirmer: k8s.NewPodGetter(mgr.GetAPIReader()),
		Observer:  deletion.Observers(metrics, events),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := k8s.SetupWithManager(mgr, engine, k8s.SetupOptions{}); err != nil {
		log.Fatal(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Fatal(err)
	}
}
