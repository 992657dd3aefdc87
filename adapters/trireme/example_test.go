package trireme_test

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/adapters/trireme"
)

// printResolver stands for trireme-lib's policy.Resolver.
type printResolver struct{ done chan struct{} }

func (r printResolver) HandlePUEvent(ctx context.Context, puID string, ev Event, runtime RuntimeReader) error {
	fmt.Printf("HandlePUEvent(%s, %s)\n", puID, ev)
	close(r.done)
	return nil
}

// The seed's wiring, on the SDK: with trireme-lib, Event is common.Event,
// EventDestroy common.EventDestroy and RuntimeReader policy.RuntimeReader.
func ExampleNewDeleteController() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	resolver := printResolver{done: make(chan struct{})}
	policy := trireme.NewPolicyHandler(resolver, EventDestroy, func() RuntimeReader { return &puRuntime{} })
	kube := fake.NewClientBuilder().Build() // usually mgr.GetClient()
	eventsCh := make(chan event.GenericEvent)

	dc, err := trireme.NewDeleteController(kube, "node-a", policy, nil, eventsCh)
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- dc.Start(ctx) }() // usually mgr.Add(dc)

	// The pod controller reports the PU it created; the pod is gone already.
	dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "uid-1", NamespaceName: client.ObjectKey{Namespace: "default", Name: "web"}}
	dc.GetReconcileCh() <- struct{}{}

	<-resolver.done
	cancel()
	fmt.Println("Start returned:", <-done)
	// Output:
	// HandlePUEvent(uid-1, Destroy)
	// Start returned: <nil>
}
