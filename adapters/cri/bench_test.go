package cri_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkSandboxID measures one SandboxID call, over the unix socket,
// against cri-client's fake runtime holding 250 sandboxes: 200 pods, 50 of
// which restarted (a stopped attempt 0 beside a ready attempt 1). Each call
// asks for the next pod in turn. The fake scans all 250 for every list, as
// a real runtime's in-memory store does; the engine makes one such call per
// live pod per sweep.
//
//	go test -run '^$' -bench SandboxID -benchmem ./adapters/cri/
func BenchmarkSandboxID(b *testing.B) {
	rt := startFake(b)
	const pods, restarted = 200, 50
	uids := make([]types.UID, pods)
	want := make(map[types.UID]string, pods)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("uid-%03d", i))
		name := fmt.Sprintf("pod-%03d", i)
		want[uids[i]] = runSandbox(b, rt.cri, uids[i], name, 0)
		if i < restarted {
			stopSandbox(b, rt.cri, want[uids[i]])
			want[uids[i]] = runSandbox(b, rt.cri, uids[i], name, 1)
		}
	}
	x := newExtractor(b, rt.endpoint, time.Second)
	podList := make([]*corev1.Pod, pods)
	for i, uid := range uids {
		podList[i] = podOf(uid)
	}
	if _, err := x.SandboxID(b.Context(), podList[0]); err != nil { // connect outside the loop
		b.Fatal(err)
	}

	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pod := podList[i%pods]
		id, err := x.SandboxID(b.Context(), pod)
		if err != nil {
			b.Fatal(err)
		}
		if id != want[pod.UID] {
			b.Fatalf("pod %s: got sandbox %q, want %q", pod.UID, id, want[pod.UID])
		}
		i++
	}
}
