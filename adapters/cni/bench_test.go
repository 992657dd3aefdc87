package cni_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/ports"
)

// The benchmarks run the real plugins in the private namespace, as root
// (see main_test.go):
//
//	make cni-plugins
//	KUBEBUILDER_ASSETS=$PWD/bin/envtest CNI_PLUGINS_DIR=$PWD/bin/cni \
//		go test -run '^$' -bench . -benchtime 3x ./adapters/cni/

// leak ADDs a sandbox of a pod that the API server has never heard of,
// as a sandbox whose pod was deleted without DEL leaves it.
func (n *node) leak(netnsGone bool) *sandbox {
	n.t.Helper()
	id := randomID()
	sb := n.add(pod{Namespace: fmt.Sprintf("node-%d", n.id), Name: "gone-" + id[:8], UID: id[:8] + "-0000-4000-8000-" + id[8:20]})
	if netnsGone {
		n.removeNetNS(sb)
	}
	return sb
}

// BenchmarkDEL measures one DestroyPU of a pod gone: the DEL of its two
// attachments (the loopback's and the bridge network's) with the real
// plugins, with its network namespace still there (the veth is removed
// in it) or gone (only the address is released).
func BenchmarkDEL(b *testing.B) {
	for _, netnsGone := range []bool{false, true} {
		b.Run(fmt.Sprintf("netnsGone=%t", netnsGone), func(b *testing.B) {
			needAPI(b)
			n := newNode(b)
			// The runtime lists a leaked sandbox whose namespace is there
			// stopped: the evidence that it is dead (decide's row 3).
			runtime := &currentSandboxes{}
			coll := n.startAgent(agentOptions{quiet: true, runtime: runtime}).collector
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				sb := n.leak(netnsGone)
				if !netnsGone {
					runtime.stop(sb.Pod, sb)
				}
				b.StartTimer()
				err := coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: sb.Pod.UID, Pod: sb.Pod.key(), SandboxID: sb.ID, Reason: ports.ReasonPodGone})
				b.StopTimer()
				require.NoError(b, err)
				require.True(b, n.freed(sb))
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/float64(len(n.nets)), "ms/attachment")
		})
	}
}

// BenchmarkFree100 measures the time from an agent's start to the last of
// 100 leaked sandboxes (200 attachments) freed: the engine lists them
// from the cache, checks each pod against the API server (gone), confirms
// with a second read and runs the DELs, 4 at a time (the engine's default
// Workers), at the engine's default SweepInterval (5s) and at 100ms.
func BenchmarkFree100(b *testing.B) {
	for _, sweep := range []time.Duration{100 * time.Millisecond, 5 * time.Second} {
		b.Run("sweepInterval="+sweep.String(), func(b *testing.B) {
			needAPI(b)
			n := newNode(b)
			results := filepath.Join(n.cacheDir, "results")
			for b.Loop() {
				b.StopTimer()
				for range 100 {
					n.leak(true)
				}
				b.StartTimer()
				a := n.startAgent(agentOptions{quiet: true, sweepInterval: sweep})
				eventually(b, 5*time.Minute, func() bool {
					entries, err := os.ReadDir(results)
					require.NoError(b, err)
					return len(entries) == 0
				}, "100 leaked sandboxes freed")
				b.StopTimer()
				a.stop()
				b.StartTimer()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/100-sandboxes")
		})
	}
}
