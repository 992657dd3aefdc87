package cri_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	fakeremote "k8s.io/cri-client/pkg/fake"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// A node agent builds one extractor on the kubelet's
// --container-runtime-endpoint and gives it to the engine, the only place
// it is given (adapters/k8s.SetupWithManager included): the engine records
// each PU's sandbox at its first check, and destroys the PU of a pod whose
// sandbox was replaced (SandboxChanged). Here cri-client's fake runtime,
// on a socket of its own, stands for containerd, and the example does to
// it what the kubelet does.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "cri-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	endpoint := "unix://" + filepath.Join(dir, "cri.sock") // on a node: unix:///run/containerd/containerd.sock
	runtime := fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		panic(err)
	}
	defer runtime.Stop()

	sandboxes, err := cri.New(endpoint, cri.Options{Timeout: 2 * time.Second})
	if err != nil {
		panic(err) // a malformed endpoint: New does not connect
	}
	defer sandboxes.Close()

	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "7f3a"}}
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return web, nil // the pod lives on
	})
	policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		fmt.Printf("destroy PU %s of sandbox %s: %s\n", ev.PUID, ev.SandboxID, ev.Reason)
		return nil
	})
	engine, err := deletion.New(getter, policy, deletion.Options{SandboxExtractor: sandboxes})
	if err != nil {
		panic(err)
	}
	if err := engine.Track(ports.PU{PUID: "7f3a", Pod: types.NamespacedName{Namespace: "shop", Name: "web-0"}}); err != nil {
		panic(err)
	}

	ctx := context.Background()
	first := kubeletRuns(runtime, web, 0)
	engine.Sweep(ctx) // the first check records the sandbox
	fmt.Println("recorded sandbox:", engine.Status()[0].SandboxID)

	// The sandbox dies, and the kubelet replaces it.
	if err := runtime.RuntimeService.StopPodSandbox(ctx, first); err != nil {
		panic(err)
	}
	kubeletRuns(runtime, web, 1)
	engine.Sweep(ctx)
	// Output:
	// recorded sandbox: web-0_shop_7f3a_0
	// destroy PU 7f3a of sandbox web-0_shop_7f3a_0: SandboxChanged
}

// SandboxID answers the pod's ready sandbox (of the highest attempt while
// a restart is in progress), and "" with no error while there is none, for
// which the engine keeps the PU. A runtime that does not answer is an
// error, never "".
func ExampleSandboxExtractor_SandboxID() {
	runtime, sandboxes, stop := exampleRuntime()
	defer stop()

	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "7f3a"}}
	ask := func() {
		id, err := sandboxes.SandboxID(context.Background(), web)
		fmt.Printf("%q %v\n", id, err)
	}
	ask()
	kubeletRuns(runtime, web, 0)
	ask()
	kubeletRuns(runtime, web, 1) // a restart in progress: two are ready
	ask()
	runtime.Stop()
	_, err := sandboxes.SandboxID(context.Background(), web)
	fmt.Println("runtime down:", err != nil)
	// Output:
	// "" <nil>
	// "web-0_shop_7f3a_0" <nil>
	// "web-0_shop_7f3a_1" <nil>
	// runtime down: true
}

// exampleRuntime starts cri-client's fake runtime on a socket of its own
// and an extractor on it; stop stops both and removes the socket.
func exampleRuntime() (runtime *fakeremote.RemoteRuntime, sandboxes *cri.SandboxExtractor, stop func()) {
	dir, err := os.MkdirTemp("", "cri-")
	if err != nil {
		panic(err)
	}
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	runtime = fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		panic(err)
	}
	if sandboxes, err = cri.New(endpoint, cri.Options{}); err != nil {
		panic(err)
	}
	return runtime, sandboxes, func() {
		_ = sandboxes.Close()
		runtime.Stop()
		_ = os.RemoveAll(dir)
	}
}

// kubeletRuns runs a sandbox of pod on the fake runtime as the kubelet
// does, labelled with the pod's UID, and returns its ID.
func kubeletRuns(runtime *fakeremote.RemoteRuntime, pod *corev1.Pod, attempt uint32) string {
	id, err := runtime.RuntimeService.RunPodSandbox(context.Background(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Labels:   map[string]string{cri.PodUIDLabel: string(pod.UID)},
	}, "")
	if err != nil {
		panic(err)
	}
	return id
}

// A node agent with many pods asks the runtime once an interval instead of
// once per check: the engine's SandboxExtractor is a SandboxCache, and the
// extractor it lists with confirms, at the moment it matters, every answer
// that would record a sandbox or destroy a PU. Here the cache's list is
// kept an hour, so it still shows the sandbox that the kubelet replaced
// and the PU tracked for the new one: the confirmer keeps that PU.
func ExampleNewSandboxCache() {
	runtime, sandboxes, stop := exampleRuntime()
	defer stop()
	listed, err := cri.NewSandboxCache(sandboxes, cri.CacheOptions{MaxAge: time.Hour}) // on a node: CacheOptions{}, 5 s
	if err != nil {
		panic(err)
	}

	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "7f3a"}}
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return web, nil })
	policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		fmt.Printf("destroy PU %s of sandbox %s: %s\n", ev.PUID, ev.SandboxID, ev.Reason)
		return nil
	})
	engine, err := deletion.New(getter, policy, deletion.Options{SandboxExtractor: listed, SandboxConfirmer: sandboxes})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first := kubeletRuns(runtime, web, 0)
	if _, err := listed.SandboxID(ctx, web); err != nil { // the list is made: it shows the first sandbox
		panic(err)
	}
	// The kubelet replaces the sandbox, and the agent tracks the PU of the new one.
	if err := runtime.RuntimeService.StopPodSandbox(ctx, first); err != nil {
		panic(err)
	}
	second := kubeletRuns(runtime, web, 1)
	if err := engine.Track(ports.PU{PUID: "7f3a", Pod: types.NamespacedName{Namespace: "shop", Name: "web-0"}, SandboxID: second}); err != nil {
		panic(err)
	}
	engine.Sweep(ctx) // its first check asks the runtime: the new sandbox, kept
	engine.Sweep(ctx) // a periodic check reads the list: the old one, which the runtime does not confirm
	st := engine.Status()[0]
	fmt.Println("kept:", st.PUID, st.SandboxID, "vetoed:", st.Vetoed)
	// Output:
	// kept: 7f3a web-0_shop_7f3a_1 vetoed: true
}
