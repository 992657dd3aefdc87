package deletion_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// A pod goes away and its PU is destroyed. An in-memory map stands in for
// the API server; a real agent uses adapters/k8s.NewPodGetter and Start
// (see New).
func Example() {
	// docs:begin plain-go
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
	if err := engine.Track(ports.PU{PUID: "7f3a", Pod: web}); err != nil {
		panic(err)
	}

	engine.Sweep(context.Background())
	fmt.Println("tracked while the pod lives:", engine.Len())

	mu.Lock()
	delete(pods, web)
	mu.Unlock()
	engine.Sweep(context.Background())
	fmt.Println("tracked once it is gone:", engine.Len())
	// docs:end plain-go

	// Output:
	// tracked while the pod lives: 1
	// destroy PU 7f3a of shop/web-0: PodGone
	// tracked once it is gone: 0
}

// An agent builds one engine, runs Start for as long as it runs, tracks
// the PU of every pod it sets up, and calls TriggerPod when it sees a pod
// deleted. An in-memory map stands in for the API server (a real agent
// reads it through adapters/k8s.NewPodGetter); the Observer tells the
// example when the destroy is done.
func ExampleNew() {
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
		fmt.Printf("destroy PU %s of %s: %s\n", ev.PUID, ev.Pod, ev.Reason) // tear down the PU
		return nil
	})
	destroyed := make(chan struct{})
	engine, err := deletion.New(getter, policy, deletion.Options{
		NodeName: "node-a",
		Observer: deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventDestroyed {
				close(destroyed)
			}
		}),
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- engine.Start(ctx) }()

	// The agent creates the PU of a pod, and tracks it.
	web := types.NamespacedName{Namespace: "shop", Name: "web-0"}
	mu.Lock()
	pods[web] = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: web.Namespace, Name: web.Name, UID: "7f3a"},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
	}
	mu.Unlock()
	if err := engine.Track(ports.PU{PUID: "7f3a", Pod: web}); err != nil {
		panic(err)
	}

	// The pod is deleted, and the agent's informer sees it go.
	mu.Lock()
	delete(pods, web)
	mu.Unlock()
	engine.TriggerPod(web)

	<-destroyed
	fmt.Println("tracked:", engine.Len())
	stop()
	fmt.Println("Start returned:", <-stopped)
	// Output:
	// destroy PU 7f3a of shop/web-0: PodGone
	// tracked: 0
	// Start returned: <nil>
}

// Track is insert-only: a second Track of a PUID changes nothing, so the
// first sandbox seen is the PU's. A PU without a PUID, pod name or
// namespace is refused.
func ExampleEngine_Track() {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return nil, ports.ErrPodNotFound
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	engine, err := deletion.New(getter, policy, deletion.Options{})
	if err != nil {
		panic(err)
	}

	web := types.NamespacedName{Namespace: "shop", Name: "web-0"}
	fmt.Println(engine.Track(ports.PU{PUID: "7f3a", Pod: web, SandboxID: "sb-1"}))
	fmt.Println(engine.Track(ports.PU{PUID: "7f3a", Pod: web, SandboxID: "sb-2"}))
	fmt.Println(engine.Track(ports.PU{PUID: "91c2"}))
	for _, s := range engine.Status() {
		fmt.Println(s.PUID, s.Pod, s.SandboxID)
	}
	// Output:
	// <nil>
	// <nil>
	// deletion: invalid PU: PUID "91c2", pod "/": PUID, pod name and namespace are required
	// 7f3a shop/web-0 sb-1
}

// Untrack forgets a PU the agent tore down itself: once its pod is gone,
// nothing is destroyed for it.
func ExampleEngine_Untrack() {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return nil, ports.ErrPodNotFound // every pod is gone
	})
	policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		fmt.Println("destroy PU", ev.PUID)
		return nil
	})
	engine, err := deletion.New(getter, policy, deletion.Options{})
	if err != nil {
		panic(err)
	}
	for _, pu := range []ports.PU{
		{PUID: "7f3a", Pod: types.NamespacedName{Namespace: "shop", Name: "web-0"}},
		{PUID: "91c2", Pod: types.NamespacedName{Namespace: "shop", Name: "web-1"}},
	} {
		if err := engine.Track(pu); err != nil {
			panic(err)
		}
	}

	fmt.Println(engine.Untrack("7f3a")) // the agent tore down 7f3a itself
	fmt.Println(engine.Untrack("7f3a"))
	engine.Sweep(context.Background())
	fmt.Println("tracked:", engine.Len())
	// Output:
	// true
	// false
	// destroy PU 91c2
	// tracked: 0
}

// Status says why each PU is kept: the row of the decision table its last
// check took and, for a PU whose destroy fails, its failed attempts and
// the last error. adapters/k8s.NewStatusHandler serves it as JSON.
func ExampleEngine_Status() {
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "7f3a"},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
	}
	getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		if key.Name == web.Name {
			return web, nil
		}
		return nil, ports.ErrPodNotFound // db-0 is gone
	})
	sandboxes := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
		return "sb-1", nil // the container runtime's answer
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
		return errors.New("policy engine unavailable")
	})
	engine, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", SandboxExtractor: sandboxes})
	if err != nil {
		panic(err)
	}
	_ = engine.Track(ports.PU{PUID: "7f3a", Pod: types.NamespacedName{Namespace: "shop", Name: "web-0"}})
	_ = engine.Track(ports.PU{PUID: "91c2", Pod: types.NamespacedName{Namespace: "shop", Name: "db-0"}, SandboxID: "sb-9"})
	engine.Sweep(context.Background())

	for _, s := range engine.Status() {
		fmt.Printf("%s %s (sandbox %s): %s; row %d, %s\n", s.PUID, s.Pod, s.SandboxID, s.State, s.LastVerdict.Row, s.LastVerdict.Why())
		if s.Attempts > 0 {
			fmt.Printf("  failed destroys: %d, last error: %v\n", s.Attempts, s.LastErr)
		}
	}
	// Output:
	// 7f3a shop/web-0 (sandbox sb-1): idle; row 7, same pod, first sandbox recorded
	// 91c2 shop/db-0 (sandbox sb-9): waiting for a retry; row 1, pod not found
	//   failed destroys: 1, last error: policy engine unavailable
}

// LivenessCheck serves a manager's /healthz and ReadinessCheck its
// /readyz (mgr.AddHealthzCheck("podsweeper", engine.LivenessCheck),
// mgr.AddReadyzCheck("podsweeper", engine.ReadinessCheck)). Before Start
// the engine is alive but not ready; once Start has returned it is
// neither. They read no request: nil does.
func ExampleEngine_ReadinessCheck() {
	web := types.NamespacedName{Namespace: "shop", Name: "web-0"}
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: web.Namespace, Name: web.Name, UID: "7f3a"}}, nil
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	checked := make(chan struct{})
	closeChecked := sync.OnceFunc(func() { close(checked) })
	engine, err := deletion.New(getter, policy, deletion.Options{
		Observer: deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventChecked {
				closeChecked() // Start's workers run
			}
		}),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(engine.LivenessCheck(nil), "|", engine.ReadinessCheck(nil))

	if err := engine.Track(ports.PU{PUID: "7f3a", Pod: web}); err != nil {
		panic(err)
	}
	engine.TriggerPod(web) // checked as soon as Start begins
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- engine.Start(ctx) }()
	<-checked
	fmt.Println(engine.LivenessCheck(nil), "|", engine.ReadinessCheck(nil))

	stop()
	<-stopped
	fmt.Println(engine.LivenessCheck(nil), "|", engine.ReadinessCheck(nil))
	// Output:
	// <nil> | deletion: engine not running: not started
	// <nil> | <nil>
	// deletion: engine not running: Start has returned | deletion: engine not running: Start has returned
}

// Classify says how the decision table reads a pod on its own, for an
// adapter choosing which pods to track: a pod bound to another node (or to
// none yet) has no PU on this one, and with DestroyTerminated a finished
// pod's PU goes.
func ExampleEngine_Classify() {
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return nil, ports.ErrPodNotFound
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	engine, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", DestroyTerminated: true})
	if err != nil {
		panic(err)
	}
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(name)},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	for _, p := range []*corev1.Pod{
		pod("web-0", "node-a", corev1.PodRunning),
		pod("web-1", "node-b", corev1.PodRunning),
		pod("web-2", "", corev1.PodPending),
		pod("job-0", "node-a", corev1.PodSucceeded),
	} {
		fmt.Println(p.Name, engine.Classify(p))
	}
	// Output:
	// web-0 Live
	// web-1 Elsewhere
	// web-2 Elsewhere
	// job-0 Finished
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
