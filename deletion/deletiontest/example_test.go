package deletiontest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// A Cluster stands in for the API server and the container runtime, a
// Policy for the policy engine. One pod is deleted, another recreated
// under its name: Sweep, one pass of checks without Start, destroys both
// PUs.
func Example() {
	// docs:begin testing-1
	cluster := deletiontest.NewCluster()
	policy := &deletiontest.Policy{}
	engine, err := deletion.New(cluster, policy, deletion.Options{
		NodeName:         "node-a",
		SandboxExtractor: cluster,
		Logger:           deletiontest.Discard(),
	})
	if err != nil {
		panic(err)
	}

	web := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "sb-1")
	db := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "db-0"}, "node-a", "sb-2")
	for _, pu := range []ports.PU{web, db} {
		if err := engine.Track(pu); err != nil {
			panic(err)
		}
	}

	cluster.DeletePod(web.Pod)
	if _, err := cluster.RecreatePod(db.Pod, "sb-3"); err != nil {
		panic(err)
	}
	engine.Sweep(context.Background())

	for _, pu := range []ports.PU{web, db} {
		for _, call := range policy.CallsOf(pu.PUID) {
			fmt.Println(call.Event)
		}
	}
	fmt.Println("tracked:", engine.Len())
	// docs:end testing-1
	// Output:
	// destroy PU uid-1 of pod shop/web-0 (sandbox "sb-1"): PodGone
	// destroy PU uid-2 of pod shop/db-0 (sandbox "sb-2"): UIDChanged
	// tracked: 0
}

// Each change a Cluster makes leads the engine to a row of the decision
// table; a read that fails keeps the PU.
func ExampleCluster() {
	cluster := deletiontest.NewCluster()
	policy := &deletiontest.Policy{}
	engine, err := deletion.New(cluster, policy, deletion.Options{
		NodeName:          "node-a",
		SandboxExtractor:  cluster,
		SandboxProber:     cluster,
		DestroyTerminated: true,
		Logger:            deletiontest.Discard(),
	})
	if err != nil {
		panic(err)
	}
	pod := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "shop", Name: name} }
	var pus []ports.PU
	for i, name := range []string{"moved", "restarted", "finished", "dead", "unreadable"} {
		pu := cluster.CreatePod(pod(name), "node-a", fmt.Sprintf("sb-%d", i))
		if err := engine.Track(pu); err != nil {
			panic(err)
		}
		pus = append(pus, pu)
	}

	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	// docs:begin testing-2
	must(cluster.MovePod(pod("moved"), "node-b"))
	must(cluster.SetSandbox(pod("restarted"), "sb-new"))
	must(cluster.SetPhase(pod("finished"), corev1.PodSucceeded))
	must(cluster.KillSandbox(pod("dead")))
	cluster.FailReads(pod("unreadable"), errors.New("connection refused"))
	engine.Sweep(context.Background())

	for _, pu := range pus {
		calls := policy.CallsOf(pu.PUID)
		if len(calls) == 0 {
			fmt.Println(pu.Pod.Name, "kept")
			continue
		}
		fmt.Println(pu.Pod.Name, calls[0].Event.Reason)
	}
	// docs:end testing-2
	// Output:
	// moved NodeChanged
	// restarted SandboxChanged
	// finished PodTerminated
	// dead SandboxDead
	// unreadable kept
}

// A Policy answers as the test asks: a failure is retried, a permanent one
// is not.
func ExamplePolicy() {
	cluster := deletiontest.NewCluster()
	policy := &deletiontest.Policy{}
	engine, err := deletion.New(cluster, policy, deletion.Options{Logger: deletiontest.Discard()})
	if err != nil {
		panic(err)
	}
	busy := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "")
	unknown := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-1"}, "node-a", "")
	for _, pu := range []ports.PU{busy, unknown} {
		if err := engine.Track(pu); err != nil {
			panic(err)
		}
		cluster.DeletePod(pu.Pod)
	}

	// docs:begin testing-3
	policy.FailNext(1, errors.New("policy engine busy"))
	engine.Sweep(context.Background()) // the PU checked first fails; the other is destroyed
	fmt.Println("calls:", policy.CallCount(), "tracked:", engine.Len())
	engine.Sweep(context.Background()) // Sweep does not wait for the retry's backoff
	fmt.Println("calls:", policy.CallCount(), "tracked:", engine.Len())

	gone := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-2"}, "node-a", "")
	if err := engine.Track(gone); err != nil {
		panic(err)
	}
	cluster.DeletePod(gone.Pod)
	policy.FailNext(1, ports.Permanent(errors.New("no such PU")))
	engine.Sweep(context.Background())
	fmt.Println("calls of web-2:", policy.Count(gone.PUID), "tracked:", engine.Len())
	// docs:end testing-3
	// Output:
	// calls: 2 tracked: 1
	// calls: 3 tracked: 0
	// calls of web-2: 1 tracked: 0
}

// An Inventory hooked as both Options.Inventory and Options.Observer keeps
// what the engine records, the sandbox included. The second engine, after
// a restart, tracks the PU again from it and sees that the pod's sandbox
// was replaced while the agent was down.
func ExampleInventory() {
	cluster := deletiontest.NewCluster()
	inv := deletiontest.NewInventory()
	web := cluster.CreatePod(types.NamespacedName{Namespace: "shop", Name: "web-0"}, "node-a", "sb-1")
	web.SandboxID = "" // the agent tracks the PU before the runtime reports its sandbox

	first, err := deletion.New(cluster, &deletiontest.Policy{}, deletion.Options{
		NodeName: "node-a", SandboxExtractor: cluster, Inventory: inv, Observer: inv, Logger: deletiontest.Discard(),
	})
	if err != nil {
		panic(err)
	}
	if err := first.Track(web); err != nil {
		panic(err)
	}
	first.Sweep(context.Background()) // records the sandbox (row 7)
	fmt.Println("recorded:", inv.PUs())

	// The agent restarts; while it is down, the runtime replaces the sandbox.
	if err := cluster.SetSandbox(web.Pod, "sb-2"); err != nil {
		panic(err)
	}
	policy := &deletiontest.Policy{}
	destroyed := make(chan struct{})
	once := sync.OnceFunc(func() { close(destroyed) })
	second, err := deletion.New(cluster, policy, deletion.Options{
		NodeName: "node-a", SandboxExtractor: cluster, Inventory: inv, Logger: deletiontest.Discard(),
		Observer: deletion.Observers(inv, deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventDestroyed {
				once()
			}
		})),
		SweepInterval: deletion.MinSweepInterval,
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- second.Start(ctx) }()
	<-destroyed
	stop()
	if err := <-stopped; err != nil {
		panic(err)
	}
	fmt.Println(policy.Destroyed()[0])
	fmt.Println("recorded:", inv.PUs())
	// Output:
	// recorded: [{uid-1 shop/web-0 sb-1}]
	// destroy PU uid-1 of pod shop/web-0 (sandbox "sb-1"): SandboxChanged
	// recorded: []
}
