package meanwhile_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// collector.go Collector: "its methods are safe from any goroutine" (run with -race).
func TestAuditHoldsMethodsSafeFromAnyGoroutine(t *testing.T) {
	e := newEnv(t, testcni.PluginsDir(t))
	testcni.Write(t, filepath.Join(e.conf, "10-n.conflist"), dualConf(e, "n"))
	for i, id := range []string{"aaaa", "bbbb", "cccc"} {
		reserve(t, filepath.Join(e.data, "n", "10.1.0."+string(rune('5'+i))), id+"\r\neth0")
		reserve(t, filepath.Join(e.data, "n", "fd00::"+string(rune('5'+i))), id+"\r\neth0")
	}
	testcni.Write(t, filepath.Join(e.plugins, "okdel"), "#!/bin/sh\ncat >/dev/null\nexit 0\n")
	_ = os.Chmod(filepath.Join(e.plugins, "okdel"), 0o755)
	for i, sb := range []string{"s1", "s2", "s3"} {
		_ = i
		testcni.Write(t, filepath.Join(e.cache, "results", "a-"+sb+"-eth0"), entry("a", sb, "eth0", "u-"+sb, "okdel"))
	}
	o := &obs{}
	c := e.collector(t, func(op *cni.Options) {
		op.Observer = o
		op.ResyncInterval = 50 * time.Millisecond
		op.ReservationRate = 20
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Resync(ctx, testcni.NopTracker{}) }()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ctx.Err() == nil {
				sb := []string{"s1", "s2", "s3"}[w%3]
				_ = c.DestroyPU(ctx, ports.DestroyEvent{PUID: "u-" + sb, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: sb, Reason: ports.ReasonPodGone})
				_ = c.DryRunDestroyPU(ctx, ports.DestroyEvent{PUID: "u-" + sb, Pod: types.NamespacedName{Namespace: "ns", Name: "p"}, SandboxID: sb, Reason: ports.ReasonSandboxChanged})
				_, _ = c.ListPUs(ctx)
				_, _ = c.SandboxDead(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID("u-" + sb)}}, sb)
				_ = addressStatus(t, c, "10.1.0.5")
				_ = c.WouldFree()
				_ = c.Requeue(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
				testcni.Write(t, filepath.Join(e.cache, "results", "a-"+sb+"-eth0"), entry("a", sb, "eth0", "u-"+sb, "okdel"))
			}
		}(w)
	}
	wg.Wait()
}
