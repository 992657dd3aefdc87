package deletion_test

// The five benchmarks of the SDK, each beside the seed's loop
// (internal/seedref) where the seed has an equivalent. Sub-benchmarks are
// named .../engine... and .../seed so that hack/bench can pair them and print
// the ratios; see BENCHMARKS.md for what each one measures and why.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/internal/seedref"
	"github.com/podsweeper/podsweeper/ports"
)

var (
	benchSteadyWindow = flag.Duration("bench.steady", 0,
		"wall-clock window of BenchmarkSteadyState (default 10s, 2s under -short)")
	benchSteadyProfile = flag.String("bench.steadyprofile", "",
		"write a CPU profile of BenchmarkSteadyState's windows (not of their set-up) to this file")
	benchSlowSeed = flag.Bool("bench.slowseed", false,
		"run BenchmarkClusterDrain's seed too: one pass of the seed's loop over 150,000 pods lasts about 500 s")
)

const benchNode = "node-a"

var errBenchUnavailable = errors.New("API server unavailable")

// benchWorld is an in-memory cluster behind the four ports, with optional
// latencies. It hands out its stored pods without copying them: the engine
// and the seed treat pods as read-only.
type benchWorld struct {
	mu   sync.RWMutex
	pods map[types.NamespacedName]*corev1.Pod

	getLatency     time.Duration
	unavailable    bool // GetPod fails with a transient error
	destroyLatency time.Duration

	gets      atomic.Int64
	destroyed chan string // PUIDs, in the order DestroyPU was called
}

func newBenchWorld(destroyBuffer int) *benchWorld {
	return &benchWorld{pods: make(map[types.NamespacedName]*corev1.Pod), destroyed: make(chan string, destroyBuffer)}
}

func benchKey(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns-" + fmt.Sprint(i%50), Name: fmt.Sprintf("pod-%d", i)}
}

// put creates or replaces the pod at key with that UID and sandbox.
func (w *benchWorld) put(key types.NamespacedName, uid, sandbox string) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(uid),
			Annotations: map[string]string{"sandbox": sandbox}},
		Spec: corev1.PodSpec{NodeName: benchNode},
	}
	w.mu.Lock()
	w.pods[key] = p
	w.mu.Unlock()
}

func (w *benchWorld) remove(key types.NamespacedName) {
	w.mu.Lock()
	delete(w.pods, key)
	w.mu.Unlock()
}

func (w *benchWorld) GetPod(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	w.gets.Add(1)
	if w.getLatency > 0 {
		time.Sleep(w.getLatency)
	}
	if w.unavailable {
		return nil, errBenchUnavailable
	}
	w.mu.RLock()
	p := w.pods[key]
	w.mu.RUnlock()
	if p == nil {
		return nil, fmt.Errorf("get %s: %w", key, ports.ErrPodNotFound)
	}
	return p, nil
}

func (w *benchWorld) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	return pod.Annotations["sandbox"], nil
}

func (w *benchWorld) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	if w.destroyLatency > 0 {
		time.Sleep(w.destroyLatency)
	}
	w.destroyed <- ev.PUID
	return nil
}

var (
	_ ports.PodGetter        = (*benchWorld)(nil)
	_ ports.SandboxExtractor = (*benchWorld)(nil)
	_ ports.PolicyHandler    = (*benchWorld)(nil)
)

// benchStartEngine runs c until the benchmark ends.
func benchStartEngine(b *testing.B, c *deletion.Engine) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Start: %v", err)
		}
	})
}

// benchStartSeed runs the seed's loop until the benchmark ends.
func benchStartSeed(b *testing.B, s *seedref.Controller) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
}

// benchSeedLen waits for the seed's loop to be idle and returns its size.
func benchSeedLen(b *testing.B, s *seedref.Controller) int {
	b.Helper()
	n, err := s.Len(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func benchNewEngine(b *testing.B, w *benchWorld, opts deletion.Options) *deletion.Engine {
	b.Helper()
	opts.SandboxExtractor = w
	opts.NodeName = benchNode
	opts.Logger = deletiontest.Discard()
	c, err := deletion.New(w, w, opts)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// benchNewClusterEngine returns an engine as a cluster-wide controller
// runs it: no node, no SandboxExtractor.
func benchNewClusterEngine(b *testing.B, w *benchWorld, opts deletion.Options) *deletion.Engine {
	b.Helper()
	opts.Logger = deletiontest.Discard()
	c, err := deletion.New(w, w, opts)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// waitDestroyed waits for n DestroyPU calls, for up to 15 minutes (the
// seed's drain at cluster scale takes about 9).
func (w *benchWorld) waitDestroyed(b *testing.B, n int) {
	b.Helper()
	timeout := time.After(15 * time.Minute)
	for range n {
		select {
		case <-w.destroyed:
		case <-timeout:
			b.Fatalf("DestroyPU not called %d times within 15m", n)
		}
	}
}

// heapAlloc returns the live heap after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// cpuTime returns the CPU time (user + system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDecideSink keeps the compiler from discarding Decide's result.
var benchDecideSink deletion.Verdict

// BenchmarkDecide (1) measures one call of the pure decision function on
// the rows a sweep takes most: a live pod with the same sandbox, a pod gone
// (a wrapped ErrPodNotFound), a sandbox replaced; and the two calls the
// engine makes for a live pod (the first answers AskSandbox).
func BenchmarkDecide(b *testing.B) {
	key := benchKey(1)
	e := ports.PU{PUID: "uid-1", Pod: key, SandboxID: "sb-1"}
	live := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "uid-1"},
		Spec:       corev1.PodSpec{NodeName: benchNode},
	}
	gone := fmt.Errorf("get: %w", ports.ErrPodNotFound)
	same := deletion.Observation{Pod: live, NodeName: benchNode, HasExtractor: true, SandboxAsked: true, SandboxID: "sb-1"}
	for _, bc := range []struct {
		name string
		o    deletion.Observation
	}{
		{"row=9-same-sandbox", same},
		{"row=1-pod-gone", deletion.Observation{Err: gone, NodeName: benchNode, HasExtractor: true}},
		{"row=10-sandbox-replaced", deletion.Observation{Pod: live, NodeName: benchNode, HasExtractor: true, SandboxAsked: true, SandboxID: "sb-2"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchDecideSink = deletion.Decide(e, bc.o)
			}
		})
	}
	b.Run("live-pod-both-calls", func(b *testing.B) {
		first := same
		first.SandboxAsked, first.SandboxID = false, ""
		b.ReportAllocs()
		for b.Loop() {
			if v := deletion.Decide(e, first); v.Action == deletion.AskSandbox {
				benchDecideSink = deletion.Decide(e, same)
			}
		}
	})
}

// benchEntries returns n distinct entries, made before the timer runs.
func benchEntries(n int) []ports.PU {
	out := make([]ports.PU, n)
	for i := range out {
		out[i] = ports.PU{PUID: fmt.Sprintf("uid-%08d", i), Pod: benchKey(i), SandboxID: fmt.Sprintf("sb-%08d", i)}
	}
	return out
}

// BenchmarkTrack (2) measures one Track while Start runs, from one goroutine
// and from GOMAXPROCS goroutines, the heap each tracked entry keeps
// (B/entry, after GC, the entries' own strings excluded: the caller holds
// them anyway), and the time to track them all (s-to-track-all). make bench
// runs it with -benchtime=150000x: 150,000 distinct entries, a cluster's;
// GetPod fails, so that a check due during the run keeps its entry.
// serial-before-start tracks before Start. The seed's Track is a send on
// its 1000-slot channel; its op ends when its loop has put every entry in
// the map.
func BenchmarkTrack(b *testing.B) {
	for _, mode := range []string{"serial", "parallel", "serial-before-start"} {
		b.Run(mode+"/engine", func(b *testing.B) {
			w := newBenchWorld(1)
			c := benchNewEngine(b, w, deletion.Options{SweepInterval: time.Hour})
			w.unavailable = true // a check due within the run keeps its entry
			if mode != "serial-before-start" {
				benchStartEngine(b, c)
			}
			entries := benchEntries(b.N)
			before := heapAlloc()
			b.ReportAllocs()
			b.ResetTimer()
			if mode != "parallel" {
				for _, e := range entries {
					if err := c.Track(e); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				var next atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := c.Track(entries[next.Add(1)-1]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(b.Elapsed().Seconds(), "s-to-track-all")
			if got := c.Len(); got != b.N {
				b.Fatalf("Len = %d, want %d", got, b.N)
			}
			b.ReportMetric((float64(heapAlloc())-float64(before))/float64(b.N), "B/entry")
			runtime.KeepAlive(c) // not started, nothing else holds it
			runtime.KeepAlive(entries)
		})
		if mode == "serial-before-start" {
			continue // the seed has no queue to skip
		}
		b.Run(mode+"/seed", func(b *testing.B) {
			w := newBenchWorld(1)
			s := seedref.New(w, w, seedref.Options{SandboxExtractor: w, TickerPeriod: time.Hour})
			benchStartSeed(b, s)
			entries := benchEntries(b.N)
			events := make([]seedref.Event, len(entries))
			for i, e := range entries {
				events[i] = seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
			}
			entries = nil
			ch := s.DeleteCh()
			before := heapAlloc()
			b.ReportAllocs()
			b.ResetTimer()
			if mode == "serial" {
				for _, ev := range events {
					ch <- ev
				}
			} else {
				var next atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						ch <- events[next.Add(1)-1]
					}
				})
			}
			for benchSeedLen(b, s) != b.N {
				runtime.Gosched()
			}
			b.StopTimer()
			b.ReportMetric((float64(heapAlloc())-float64(before))/float64(b.N), "B/entry")
			runtime.KeepAlive(events)
		})
	}
}

// BenchmarkTriggerPod (3): N live pods are tracked; one op deletes one of
// them and asks for it to be checked (the engine's TriggerPod, the seed's
// reconcile channel), then waits for its DestroyPU. It reports the GetPod
// calls an op costs and the time from the trigger to DestroyPU. The seed's
// op also waits for the end of its pass, which the next trigger would wait
// for anyway. Replacing the deleted pod and its entry is not timed.
func BenchmarkTriggerPod(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("N=%d/engine", n), func(b *testing.B) {
			w := newBenchWorld(16)
			c := benchNewEngine(b, w, deletion.Options{SweepInterval: time.Hour})
			for i, e := range benchEntries(n) {
				w.put(benchKey(i), e.PUID, e.SandboxID)
				if err := c.Track(e); err != nil {
					b.Fatal(err)
				}
			}
			benchStartEngine(b, c)
			benchTrigger(b, w, n, func(key types.NamespacedName) { c.TriggerPod(key) },
				func(e ports.PU) {
					if err := c.Track(e); err != nil {
						b.Fatal(err)
					}
				}, func() {})
		})
		b.Run(fmt.Sprintf("N=%d/seed", n), func(b *testing.B) {
			w := newBenchWorld(16)
			s := seedref.New(w, w, seedref.Options{SandboxExtractor: w, TickerPeriod: time.Hour, Requeue: make(chan *corev1.Pod, 1)})
			benchStartSeed(b, s)
			for i, e := range benchEntries(n) {
				w.put(benchKey(i), e.PUID, e.SandboxID)
				s.DeleteCh() <- seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
			}
			for benchSeedLen(b, s) != n {
				runtime.Gosched()
			}
			benchTrigger(b, w, n, func(types.NamespacedName) { s.ReconcileCh() <- struct{}{} },
				func(e ports.PU) {
					s.DeleteCh() <- seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
				}, func() { benchSeedLen(b, s) })
		})
	}
}

// benchTrigger is the loop of BenchmarkTriggerPod: trigger asks for a check
// of the deleted pod, track replaces its entry, settle waits for the end of
// the check's pass.
func benchTrigger(b *testing.B, w *benchWorld, n int, trigger func(types.NamespacedName), track func(ports.PU), settle func()) {
	b.Helper()
	var toDestroy time.Duration
	gets := int64(0)
	gen := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := benchKey(i % n)
		w.mu.RLock()
		victim := string(w.pods[key].UID)
		w.mu.RUnlock()
		g0 := w.gets.Load()
		start := time.Now()
		w.remove(key)
		trigger(key)
		if got := <-w.destroyed; got != victim {
			b.Fatalf("destroyed %s, want %s", got, victim)
		}
		toDestroy += time.Since(start)
		settle()
		gets += w.gets.Load() - g0

		b.StopTimer()
		gen++
		e := ports.PU{PUID: fmt.Sprintf("uid-%d-%d", i%n, gen), Pod: key, SandboxID: fmt.Sprintf("sb-%d-%d", i%n, gen)}
		w.put(key, e.PUID, e.SandboxID)
		track(e)
		b.StartTimer()
	}
	b.ReportMetric(float64(toDestroy.Microseconds())/float64(b.N), "us-to-destroy")
	b.ReportMetric(float64(gets)/float64(b.N), "getpods/op")
}

// BenchmarkDrain (4): a node drain. 200 tracked pods are deleted at once,
// GetPod takes 2 ms and DestroyPU 20 ms; one op lasts until all 200 PUs
// are destroyed. The engine hears of each deletion with TriggerPod, the
// seed with one send on its reconcile channel.
func BenchmarkDrain(b *testing.B) {
	const pods = 200
	newWorld := func() *benchWorld {
		w := newBenchWorld(pods)
		w.getLatency, w.destroyLatency = 2*time.Millisecond, 20*time.Millisecond
		return w
	}
	run := func(b *testing.B, w *benchWorld, track func(ports.PU), drain func([]types.NamespacedName)) {
		keys := make([]types.NamespacedName, pods)
		for i := range keys {
			keys[i] = benchKey(i)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			for j, key := range keys {
				e := ports.PU{PUID: fmt.Sprintf("uid-%d-%d", j, i), Pod: key, SandboxID: fmt.Sprintf("sb-%d-%d", j, i)}
				w.put(key, e.PUID, e.SandboxID)
				track(e)
			}
			b.StartTimer()
			for _, key := range keys {
				w.remove(key)
			}
			drain(keys)
			w.waitDestroyed(b, pods)
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms-to-destroy")
	}
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("engine/workers=%d", workers), func(b *testing.B) {
			w := newWorld()
			c := benchNewEngine(b, w, deletion.Options{SweepInterval: time.Hour, Workers: workers})
			benchStartEngine(b, c)
			run(b, w, func(e ports.PU) {
				if err := c.Track(e); err != nil {
					b.Fatal(err)
				}
			}, func(keys []types.NamespacedName) {
				for _, key := range keys {
					c.TriggerPod(key)
				}
			})
		})
	}
	b.Run("seed", func(b *testing.B) {
		w := newWorld()
		s := seedref.New(w, w, seedref.Options{SandboxExtractor: w, TickerPeriod: time.Hour})
		benchStartSeed(b, s)
		run(b, w, func(e ports.PU) {
			s.DeleteCh() <- seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
		}, func([]types.NamespacedName) {
			for benchSeedLen(b, s) != pods {
				runtime.Gosched()
			}
			s.ReconcileCh() <- struct{}{}
		})
	})
}

// BenchmarkSteadyState (5): what the engine costs a node, or a whole
// cluster, when nothing happens. scale=node: 250 live entries and a 5 s
// SweepInterval (a busy node at the default); scale=cluster: 150,000 live
// entries (the Kubernetes limit of pods per cluster) and a 60 s interval;
// scale=cluster-wide: the same as a cluster-wide controller runs it (no
// node, no SandboxExtractor, 16 workers).
// In-memory ports. One op is a wall-clock window (-bench.steady, 10 s by
// default, 2 s under -short, and at least one interval but under -short)
// after a warm-up; it reports the process's CPU time per wall second
// (cpu-cores), the checks per second and the allocations per check. The
// seed runs the same entries with its ticker at the same interval.
func BenchmarkSteadyState(b *testing.B) {
	window := *benchSteadyWindow
	if window == 0 {
		window = 10 * time.Second
		if testing.Short() {
			window = 2 * time.Second
		}
	}
	measure := func(b *testing.B, w *benchWorld, window time.Duration) {
		runtime.GC()
		time.Sleep(1500 * time.Millisecond) // past the start's burst of allocations
		var cpu, wall time.Duration
		var gets, allocs int64
		var ms runtime.MemStats
		if *benchSteadyProfile != "" {
			f, err := os.Create(*benchSteadyProfile)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
			defer pprof.StopCPUProfile()
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			runtime.ReadMemStats(&ms)
			g0, a0, c0, t0 := w.gets.Load(), ms.Mallocs, cpuTime(b), time.Now()
			time.Sleep(window)
			gets += w.gets.Load() - g0
			cpu += cpuTime(b) - c0
			wall += time.Since(t0)
			runtime.ReadMemStats(&ms)
			allocs += int64(ms.Mallocs - a0)
		}
		b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-cores")
		b.ReportMetric(float64(gets)/wall.Seconds(), "checks/s")
		if gets > 0 {
			b.ReportMetric(float64(allocs)/float64(gets), "allocs/check")
		}
	}
	for _, sc := range []steadyScale{
		{name: "node", n: 250, interval: 5 * time.Second, whole: true},
		{name: "cluster", n: 150_000, interval: time.Minute, whole: !testing.Short()},
		{name: "cluster-wide", n: clusterPUs, interval: time.Minute, whole: !testing.Short(), clusterWide: true},
	} {
		b.Run("scale="+sc.name+"/engine", func(b *testing.B) {
			w := newBenchWorld(1)
			var c *deletion.Engine
			if sc.clusterWide {
				c = benchNewClusterEngine(b, w, deletion.Options{SweepInterval: sc.interval, Workers: clusterWorkers})
			} else {
				c = benchNewEngine(b, w, deletion.Options{SweepInterval: sc.interval})
			}
			for i, e := range benchEntries(sc.n) {
				w.put(benchKey(i), e.PUID, e.SandboxID)
				if err := c.Track(e); err != nil {
					b.Fatal(err)
				}
			}
			benchStartEngine(b, c)
			measure(b, w, sc.window(window))
		})
		b.Run("scale="+sc.name+"/seed", func(b *testing.B) {
			w := newBenchWorld(1)
			o := seedref.Options{SandboxExtractor: w, TickerPeriod: sc.interval}
			if sc.clusterWide {
				o.SandboxExtractor = nil
			}
			s := seedref.New(w, w, o)
			benchStartSeed(b, s)
			for i, e := range benchEntries(sc.n) {
				w.put(benchKey(i), e.PUID, e.SandboxID)
				s.DeleteCh() <- seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
			}
			measure(b, w, sc.window(window))
		})
	}
}

// steadyScale is one scale of BenchmarkSteadyState.
type steadyScale struct {
	name     string
	n        int
	interval time.Duration
	// whole: the window is at least one interval, for a loop that checks
	// everything in one burst per interval (the seed) to be measured fairly.
	whole bool
	// clusterWide: the engine has no node, no SandboxExtractor and
	// clusterWorkers workers, as a cluster-wide controller runs it; the
	// seed has no SandboxExtractor.
	clusterWide bool
}

func (sc steadyScale) window(w time.Duration) time.Duration {
	if sc.whole {
		return max(w, sc.interval)
	}
	return w
}

// clusterPUs is the number of PUs of the cluster-scale benchmarks: the
// Kubernetes limit of pods per cluster.
const clusterPUs = 150_000

// clusterWorkers is the Workers of the cluster-scale benchmarks, as
// examples/cluster-controller runs.
const clusterWorkers = 16

// benchClusterWorld returns a world of clusterPUs live pods and their
// entries, with room for destroyBuffer destroys.
func benchClusterWorld(destroyBuffer int) (*benchWorld, []ports.PU) {
	w := newBenchWorld(destroyBuffer)
	entries := benchEntries(clusterPUs)
	for i, e := range entries {
		w.put(benchKey(i), e.PUID, e.SandboxID)
	}
	return w, entries
}

// BenchmarkTriggerAll (6): 150,000 live pods tracked by a cluster-wide
// engine (no node, no SandboxExtractor, 16 workers); one op is a TriggerAll
// and lasts until 150,000 more GetPod calls have been made (in-memory
// ports, no latency). SweepInterval is an hour, so that the periodic checks
// (42 a second) end an op early by under 1%. It reports the time to check
// all (ms-to-check-all), the process's CPU time per op (cpu-s/op), the
// allocations per check and the heap per tracked PU (B/PU). The seed's op
// is one send on its reconcile channel and lasts until its pass ends.
func BenchmarkTriggerAll(b *testing.B) {
	b.Run("engine", func(b *testing.B) {
		w, entries := benchClusterWorld(1)
		before := heapAlloc()
		c := benchNewClusterEngine(b, w, deletion.Options{SweepInterval: time.Hour, Workers: clusterWorkers})
		for _, e := range entries {
			if err := c.Track(e); err != nil {
				b.Fatal(err)
			}
		}
		perPU := (float64(heapAlloc()) - float64(before)) / clusterPUs
		benchStartEngine(b, c)
		benchTriggerAll(b, w, c.TriggerAll, func() {})
		b.ReportMetric(perPU, "B/PU")
	})
	b.Run("seed", func(b *testing.B) {
		w, entries := benchClusterWorld(1)
		before := heapAlloc()
		s := seedref.New(w, w, seedref.Options{TickerPeriod: time.Hour})
		benchStartSeed(b, s)
		for _, e := range entries {
			s.DeleteCh() <- seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
		}
		for benchSeedLen(b, s) != clusterPUs {
			runtime.Gosched()
		}
		perPU := (float64(heapAlloc()) - float64(before)) / clusterPUs
		benchTriggerAll(b, w, func() { s.ReconcileCh() <- struct{}{} }, func() { benchSeedLen(b, s) })
		b.ReportMetric(perPU, "B/PU")
	})
}

// benchTriggerAll is the loop of BenchmarkTriggerAll: trigger asks for a
// check of every entry; an op ends once clusterPUs more GetPod calls were
// made, and settle has returned.
func benchTriggerAll(b *testing.B, w *benchWorld, trigger func(), settle func()) {
	b.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	a0, c0 := ms.Mallocs, cpuTime(b)
	var gets int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g0 := w.gets.Load()
		trigger()
		for w.gets.Load()-g0 < clusterPUs {
			time.Sleep(time.Millisecond)
		}
		settle()
		gets += w.gets.Load() - g0
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms-to-check-all")
	b.ReportMetric((cpuTime(b)-c0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(ms.Mallocs-a0)/float64(gets), "allocs/check")
}

// BenchmarkClusterDrain (7): 150,000 pods tracked by a cluster-wide engine
// (no node, no SandboxExtractor, 16 workers, SweepInterval 60 s); every
// GetPod takes 2 ms and every DestroyPU 20 ms, the drain's latencies,
// periodic checks included. One op deletes 10,000 pods at once, triggers
// each and lasts until their 10,000 PUs are destroyed (s-to-last-destroy);
// it also reports the process's CPU time per op (cpu-s/op) and the heap per
// tracked PU (B/PU). The seed hears of the deletions through one send on
// its reconcile channel; its ticker is set to an hour, so that no periodic
// pass (300 s at 2 ms a pod) runs beside it. Its one pass lasts about 500 s:
// it runs only with -bench.slowseed.
func BenchmarkClusterDrain(b *testing.B) {
	const deleted = 10_000
	run := func(b *testing.B, w *benchWorld, entries []ports.PU, track func(ports.PU), drain func([]types.NamespacedName)) {
		keys := make([]types.NamespacedName, deleted)
		for i := range keys {
			keys[i] = entries[i*(clusterPUs/deleted)].Pod // spread over the cluster
		}
		c0 := cpuTime(b)
		var setup time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i > 0 { // the first op deletes the pods tracked already
				b.StopTimer()
				s0 := cpuTime(b)
				for j, key := range keys {
					e := ports.PU{PUID: fmt.Sprintf("uid-%d-%d", j, i), Pod: key}
					w.put(key, e.PUID, "")
					track(e)
				}
				setup += cpuTime(b) - s0
				b.StartTimer()
			}
			for _, key := range keys {
				w.remove(key)
			}
			drain(keys)
			w.waitDestroyed(b, deleted)
		}
		b.StopTimer()
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s-to-last-destroy")
		b.ReportMetric((cpuTime(b)-c0-setup).Seconds()/float64(b.N), "cpu-s/op")
	}
	newWorld := func() (*benchWorld, []ports.PU) {
		w, entries := benchClusterWorld(deleted)
		w.getLatency, w.destroyLatency = 2*time.Millisecond, 20*time.Millisecond
		return w, entries
	}
	b.Run("engine/workers=16", func(b *testing.B) {
		w, entries := newWorld()
		before := heapAlloc()
		c := benchNewClusterEngine(b, w, deletion.Options{SweepInterval: time.Minute, Workers: clusterWorkers})
		for _, e := range entries {
			if err := c.Track(e); err != nil {
				b.Fatal(err)
			}
		}
		perPU := (float64(heapAlloc()) - float64(before)) / clusterPUs
		benchStartEngine(b, c)
		run(b, w, entries, func(e ports.PU) {
			if err := c.Track(e); err != nil {
				b.Fatal(err)
			}
		}, func(keys []types.NamespacedName) {
			for _, key := range keys {
				c.TriggerPod(key)
			}
		})
		b.ReportMetric(perPU, "B/PU") // after run: ResetTimer drops the metrics reported before it
	})
	b.Run("seed", func(b *testing.B) {
		if !*benchSlowSeed {
			b.Skip("one pass of the seed over 150,000 pods at 2 ms a GetPod lasts about 500 s: run with -bench.slowseed")
		}
		w, entries := newWorld()
		before := heapAlloc()
		s := seedref.New(w, w, seedref.Options{TickerPeriod: time.Hour})
		benchStartSeed(b, s)
		for _, e := range entries {
			s.DeleteCh() <- seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
		}
		for benchSeedLen(b, s) != clusterPUs {
			runtime.Gosched()
		}
		perPU := (float64(heapAlloc()) - float64(before)) / clusterPUs
		run(b, w, entries, func(e ports.PU) {
			s.DeleteCh() <- seedref.Event{PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID}
		}, func([]types.NamespacedName) {
			s.ReconcileCh() <- struct{}{}
		})
		b.ReportMetric(perPU, "B/PU")
	})
}
