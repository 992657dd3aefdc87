package deletion_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// A pod goes away and its PU is destroyed. An in-memory map stands in for
// the API server; a real agent uses adapters/k8s.NewPodGetter and Start.
func Example() {
	var mu sync.Mutex
	pods := map[types.NamespacedName]*corev1.Pod{}
	getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := pods[key]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("pod %s: %w", key, ports.ErrPodNotFound)
	})
	policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		fmt.Printf("destroy PU %s of %s: %s\n", ev.PUID, ev.Pod, ev.Reason)
		return nil
	})

	engine, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a"})
	if err != nil {
		panic(err)
	}

	web := types.NamespacedName{Namespace: "shop", Name: "web-0"}
	pods[web] = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: web.Namespace, Name: web.Name, UID: "7f3a"},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
	}
	_ = engine.Track(ports.PU{PUID: "7f3a", Pod: web})

	engine.Sweep(context.Background())
	fmt.Println("tracked while the pod lives:", engine.Len())

	mu.Lock()
	delete(pods, web)
	mu.Unlock()
	engine.Sweep(context.Background())
	fmt.Println("tracked once it is gone:", engine.Len())

	// Output:
	// tracked while the pod lives: 1
	// destroy PU 7f3a of shop/web-0: PodGone
	// tracked once it is gone: 0
}

// Decide is a pure function: the whole decision table, with no I/O.
func ExampleDecide() {
	e := ports.PU{PUID: "7f3a", Pod: types.NamespacedName{Namespace: "shop", Name: "web-0"}, SandboxID: "sb-1"}
	recreated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "91c2"}}

	fmt.Println(deletion.Decide(e, deletion.Observation{Err: ports.ErrPodNotFound}))
	fmt.Println(deletion.Decide(e, deletion.Observation{Pod: recreated}))
	// Output:
	// row 1 Destroy: pod not found (PodGone)
	// row 4 Destroy: pod recreated with another UID (UIDChanged)
}
