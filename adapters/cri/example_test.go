package cri_test

import (
	"context"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/deletion"
)

// A node agent builds one extractor on the kubelet's
// --container-runtime-endpoint and gives it to the engine (the only place
// it is given, adapters/k8s.SetupWithManager included), so that the engine destroys
// the PU of a pod whose sandbox was replaced (SandboxChanged) and requeues
// the pod. It needs a runtime, so it is compiled, not run; the tests make
// the same calls against cri-client's fake runtime, and examples/node-agent
// runs the whole agent.
func ExampleNew() {
	sandboxes, err := cri.New("unix:///run/containerd/containerd.sock", cri.Options{Timeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err) // a malformed endpoint: New does not connect
	}
	defer sandboxes.Close()
	opts := deletion.Options{NodeName: "node-a", SandboxExtractor: sandboxes}
	_ = opts // deletion.New(podGetter, policy, opts)

	// What the engine asks at each check of a live pod:
	var pod *corev1.Pod // a pod of the node, from the informer
	id, err := sandboxes.SandboxID(context.Background(), pod)
	switch {
	case err != nil:
		log.Print(err) // the runtime did not answer: the engine keeps the PU and asks again
	case id == "":
		log.Print("no ready sandbox yet") // the engine keeps the PU
	default:
		log.Print("sandbox ", id)
	}
}
