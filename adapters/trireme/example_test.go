package trireme_test

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/adapters/trireme"
	"github.com/podsweeper/podsweeper/ports"
)

// printResolver stands for trireme-lib's policy.Resolver.
type printResolver struct{ done chan struct{} }

func (r printResolver) HandlePUEvent(ctx context.Context, puID string, ev Event, runtime RuntimeReader) error {
	fmt.Printf("HandlePUEvent(%s, %s)\n", puID, ev)
	close(r.done)
	return nil
}

// The seed's wiring, on the SDK (docs/sdk/migrating-from-trireme.md): with trireme-lib, Event is
// common.Event, EventDestroy common.EventDestroy and RuntimeReader
// policy.RuntimeReader. The pod monitor sends a DeleteEvent for every PU it
// creates, as before; here the pod is gone already, so the first check
// destroys its PU.
func ExampleNewDeleteController() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	resolver := printResolver{done: make(chan struct{})}
	destroy := trireme.NewPolicyHandler(resolver, EventDestroy, func() RuntimeReader { return &puRuntime{} })
	// Stands for the pod monitor's extractors.PodSandboxExtractor.
	sandboxExtractor := func(_ context.Context, pod *corev1.Pod) (string, error) {
		return pod.Annotations["example.com/sandbox-id"], nil
	}
	kube := fake.NewClientBuilder().Build() // usually mgr.GetClient()
	eventsCh := make(chan event.GenericEvent)

	dc, err := trireme.NewDeleteController(kube, "node-a", destroy, trireme.NewSandboxExtractor(sandboxExtractor), eventsCh)
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- dc.Start(ctx) }() // usually mgr.Add(dc)

	dc.GetDeleteCh() <- trireme.DeleteEvent{PodUID: "uid-1", NamespaceName: client.ObjectKey{Namespace: "default", Name: "web"}}
	dc.GetReconcileCh() <- struct{}{}

	<-resolver.done
	cancel()
	fmt.Println("Start returned:", <-done)
	// Output:
	// HandlePUEvent(uid-1, Destroy)
	// Start returned: <nil>
}

// cacheResolver stands for trireme-lib's resolver, which fails for a PU
// missing from its cache.
type cacheResolver map[string]bool

func (r cacheResolver) HandlePUEvent(ctx context.Context, puID string, ev Event, runtime RuntimeReader) error {
	if !r[puID] {
		return fmt.Errorf("unable to find context for PU %s", puID)
	}
	delete(r, puID)
	return nil
}

// The engine retries a failed destroy for as long as it fails, so a
// destroy of a PU the policy engine does not know (destroyed already, or
// before the agent restarted) must succeed: TreatAsDestroyed counts the
// resolver's answer for such a PU as a destroy.
func ExampleTreatAsDestroyed() {
	resolver := cacheResolver{"uid-1": true}
	plain := trireme.NewPolicyHandler(resolver, EventDestroy, nil)
	destroy := trireme.TreatAsDestroyed(plain, func(err error) bool {
		return strings.Contains(err.Error(), "unable to find context")
	})

	ctx := context.Background()
	ev := ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "default", Name: "web"}, Reason: ports.ReasonPodGone}
	fmt.Println(destroy.DestroyPU(ctx, ev))
	fmt.Println(plain.DestroyPU(ctx, ev)) // retried forever
	fmt.Println(destroy.DestroyPU(ctx, ev))
	// Output:
	// <nil>
	// trireme: HandlePUEvent(uid-1, Destroy) for pod default/web: unable to find context for PU uid-1
	// <nil>
}
