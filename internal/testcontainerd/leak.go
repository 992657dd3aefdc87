package testcontainerd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// LeakMessage is what host-local answers the ADD of a sandbox once every
// address of its range is held (flannel-io/flannel#1416,
// rancher/rancher#14504); the kubelet reports it in FailedCreatePodSandBox
// events.
const LeakMessage = "no IP addresses available in range set"

// stuckTimeout bounds the wait for every pod to be stuck after a reboot:
// the kubelet's first sandbox attempts fail within seconds.
const stuckTimeout = 2 * time.Minute

// ReproduceRebootLeak reproduces the leak of a reboot that loses the
// runtime's state: it runs count pods in namespace (as many as the node's
// range holds: 5 on the default /29), reboots the node (Reboot: libcni's
// cache and host-local's addresses survive, containerd forgets every
// sandbox), and waits until every pod is stuck: no ready sandbox, and a
// FailedCreatePodSandBox event with LeakMessage since the reboot. It
// returns the pods as they ran before the reboot (their UIDs, addresses
// and sandboxes are what the cache holds) and fails the test if the leak
// does not reproduce.
func (n *Node) ReproduceRebootLeak(t testing.TB, namespace string, count int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range count {
		pods = append(pods, n.RunPod(t, n.NewPod(namespace, fmt.Sprintf("leak-%d", i))))
	}
	held := n.Addresses(t)
	if len(held) != count {
		t.Fatalf("%d pods hold %d addresses: %v", count, len(held), held)
	}
	before := make(map[string]int, count)
	for _, p := range pods {
		before[p.Name] = n.leakEvents(t, p)
	}
	rebooted := time.Now()
	n.Reboot(t)
	deadline := time.Now().Add(stuckTimeout)
	for {
		var waiting []string
		for _, p := range pods {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ready, err := n.ReadySandbox(ctx, string(p.UID))
			cancel()
			if err != nil || ready != "" || n.leakEvents(t, p) <= before[p.Name] {
				waiting = append(waiting, p.Name)
			}
		}
		if len(waiting) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the reboot, pods %v are not stuck with %q within %v; events of %s:\n%s", waiting, LeakMessage, stuckTimeout,
				waiting[0], strings.Join(n.Events(t, pods[slices.IndexFunc(pods, func(p *corev1.Pod) bool { return p.Name == waiting[0] })]), "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("node %s: every one of %d pods stuck with %q %v after the reboot began", n.Name, count, LeakMessage,
		time.Since(rebooted).Round(time.Millisecond))
	return pods
}

// leakEvents counts the pod's FailedCreatePodSandBox events that carry
// LeakMessage.
func (n *Node) leakEvents(t testing.TB, p *corev1.Pod) int {
	t.Helper()
	c := 0
	for _, e := range n.Events(t, p) {
		if strings.HasPrefix(e, "FailedCreatePodSandBox: ") && strings.Contains(e, LeakMessage) {
			c++
		}
	}
	return c
}
