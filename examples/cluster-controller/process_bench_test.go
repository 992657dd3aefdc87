package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// benchSizes are the pod counts of BenchmarkProcess, in the order the pod
// set grows; the heap's slope is taken between the two.
var benchSizes = []int{5000, 10000}

// The pod set of BenchmarkProcess.
const (
	benchNS     = "bench"
	benchPrefix = "web"
	// benchNodes node names share the pods (no Node objects: nothing reads them).
	benchNodes = 100
	// benchDeletes pods, the first ones by index, are deleted at once in
	// each sub-benchmark, and applied again.
	benchDeletes = 1000
	// benchWorkers goroutines send the delete calls, as ApplyPods sends its applies.
	benchWorkers = 32
	// extrapolatedPods is the cluster the heap is extrapolated to: the
	// cluster-wide scale that BENCHMARKS.md holds the engine to.
	extrapolatedPods = 150_000
)

// heapProfileDir, when set, receives each sub-benchmark's heap profile
// (after a GC) at the moment its heap is measured, for go tool pprof: where
// the heap goes.
var heapProfileDir = flag.String("heap-profile-dir", "", "BenchmarkProcess: write the controller's heap profile of each sub-benchmark to this directory")

// BenchmarkProcess measures the cluster controller as it is deployed: the
// binary built from this package (without -race), run as a child process
// with its ServiceAccount's permissions (deploy/) and leader election on,
// against one real kube-apiserver and etcd (envtest) for the whole
// benchmark. The pods are realistic (procbench.ApplyPods: a Deployment's
// pod applied by server-side apply as kube-controller-manager, its status
// as the kubelet, so that the API server writes both managers'
// managedFields), spread over 100 node names, with no Node objects and no
// kubelet.
//
// pods=5000, then pods=10000, grow one pod set (5,000 pods, then 5,000
// more). Under each, cache=full (--slim-pod-cache=false: whole pods in the
// cache) and cache=slim (the default) start a fresh process, with an empty
// --pu-dir, a Lease of its own and the default --sweep-interval (1 min),
// and report:
//
//   - s-to-tracked: from the process's start until its
//     podsweeper_tracked_pus (--metrics-bind-address, polled every 50 ms)
//     equals the number of pods: start-up, election, the cache's list and
//     the engine tracking every pod, with a PU file written for each;
//   - heap-MiB and heap-B/pod: the live heap (HeapAlloc right after a GC,
//     through --pprof-bind-address), in all and per pod, once the check
//     that each pod's add triggers has run too (the count of
//     podsweeper_check_duration_seconds reaches the number of pods): until
//     then the copies of whole pods that those checks read from a full
//     cache are live too; rss-MiB, the process's resident memory then;
//   - ms-p50- and ms-p99-delete-to-destroy: 1,000 pods are deleted at once
//     (32 goroutines, grace period 0 as there is no kubelet to end them);
//     for each, from when a watch of the benchmark, started before the
//     deletes, saw it deleted to the time of the controller's "destroying
//     PU" log line (never sampled, see startController); s-last-destroy:
//     from the first delete call to the last of those lines. Each of the
//     1,000 PUs must be destroyed exactly once and no other, over the
//     process's whole life. The 1,000 pods are then applied again (new
//     UIDs), tracked again, and the process is stopped with SIGTERM, so
//     that the next sub-benchmark finds the same pods.
//
// Each sub-benchmark does its work once, whatever b.N is (a start of a
// process, a deletion of 1,000 pods): run it with -benchtime=1x. ns/op is
// not reported: it would be the sub-benchmark's wall time, the applies
// again included. At pods=10000, each cache's sub-benchmark also logs the
// heap each added pod took since pods=5000, and the heap extrapolated along
// that line to 150,000 pods. Every sub-benchmark logs the load average at
// its start and end: the numbers depend on what else the machine runs.
// -heap-profile-dir=DIR (after -args) keeps each sub-benchmark's heap
// profile.
//
// It is skipped without KUBEBUILDER_ASSETS, like the tests. make
// bench-process runs it:
//
//	KUBEBUILDER_ASSETS=bin/envtest KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=60s \
//	  go test -run '^$' -bench '^BenchmarkProcess$' -benchtime=1x -count=1 -timeout=60m ./examples/cluster-controller/
func BenchmarkProcess(b *testing.B) {
	env := newBenchEnv(b)
	for _, n := range benchSizes {
		ok := b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			env.grow(b, n)
			for _, cache := range []string{"full", "slim"} {
				b.Run("cache="+cache, func(b *testing.B) { env.measure(b, cache) })
			}
		})
		if !ok {
			return // the next size would start from a pod set of unknown size
		}
	}
}

// newBenchEnv starts the API server, creates the objects of deploy/ and
// the benchmark's namespace, and builds the controller's binary.
func newBenchEnv(b *testing.B) *benchEnv {
	cfg, kubeconfig := testkube.StartAPIServer(b)
	env := &benchEnv{bin: buildController(b), uids: map[string]types.UID{}, heaps: map[string]map[int]int64{"full": {}, "slim": {}},
		kubeconfig: testkube.ImpersonatingKubeconfig(b, kubeconfig, controllerUser)}
	admin, err := client.New(cfg, client.Options{})
	require.NoError(b, err)
	testkube.ApplyKustomization(b, admin, "deploy")
	env.cs, err = kubernetes.NewForConfig(cfg)
	require.NoError(b, err)
	env.md, err = metadata.NewForConfig(cfg)
	require.NoError(b, err)
	_, err = env.cs.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{})
	require.NoError(b, err)
	return env
}

// drainRuns is how many times BenchmarkDrainEvents measures each side.
var drainRuns = flag.Int("drain-runs", 3, "BenchmarkDrainEvents: runs of each side, events on and off, one after the other")

// BenchmarkDrainEvents measures what the Events of the destroys cost a
// drain: BenchmarkProcess's pod set of 10,000 realistic pods, of which
// 1,000 are deleted at once, with the cluster controller's binary run as
// its ServiceAccount, slim cache, once with --events=true (the default)
// and once with --events=false, -drain-runs times each (3 by default),
// alternately. Each run is a fresh process with a Lease of its own; it
// reports, over the window from the first delete call until the last
// destroy and, with Events, until every Event of the drain is listed:
//
//   - requests/destroy: the controller's own requests to the API server
//     (client-go's rest_client_requests_total on its /metrics, every
//     client of the process: the checks' confirming reads, the Events,
//     the Lease's renewals), and get/destroy, post/destroy, patch/destroy,
//     put/destroy by method;
//   - event-writes/destroy: the API server's count of events.k8s.io
//     writes (apiserver_request_total, POST and PATCH), which only the
//     controller makes;
//   - events/destroy: the events.k8s.io Events listed that regard the
//     deleted pods, and series/destroy those among them that the recorder
//     aggregated into a series (their count is logged);
//   - ms-p50- and ms-p99-delete-to-destroy, s-last-destroy as in
//     BenchmarkProcess, and s-last-event: from the first delete call until
//     every Event is listed (polled every 50 ms).
//
// The controller logs with its default logger (BenchmarkProcess's
// timestamps to the nanosecond excepted): every "destroying PU" line is
// there. Run it with -benchtime=1x:
//
//	KUBEBUILDER_ASSETS=bin/envtest KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=60s \
//	  go test -run '^$' -bench '^BenchmarkDrainEvents$' -benchtime=1x -count=1 -timeout=60m ./examples/cluster-controller/
func BenchmarkDrainEvents(b *testing.B) {
	env := newBenchEnv(b)
	env.grow(b, benchSizes[len(benchSizes)-1])
	for run := 1; run <= *drainRuns; run++ {
		for _, events := range []bool{true, false} {
			name := fmt.Sprintf("run=%d/events=%s", run, map[bool]string{true: "on", false: "off"}[events])
			b.Run(name, func(b *testing.B) { env.drain(b, run, events) })
		}
	}
}

// requestCounts are the requests counted at one moment: the controller's,
// by method, and the API server's events.k8s.io writes.
type requestCounts struct {
	byMethod    map[string]float64
	eventWrites float64
}

// counts reads the controller's client metrics and the API server's.
func (e *benchEnv) counts(b *testing.B, p *controllerProc) requestCounts {
	b.Helper()
	c := requestCounts{byMethod: map[string]float64{}}
	text := testkube.Get(b, "http://"+p.metricsAddr+"/metrics")
	require.NotEmpty(b, text)
	for _, m := range []string{"GET", "POST", "PATCH", "PUT", "DELETE"} {
		c.byMethod[m] = procbench.Sum(text, "rest_client_requests_total", map[string]string{"method": m})
	}
	raw, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	require.NoError(b, err)
	for _, verb := range []string{"POST", "PATCH"} {
		c.eventWrites += procbench.Sum(string(raw), "apiserver_request_total",
			map[string]string{"group": "events.k8s.io", "resource": "events", "verb": verb})
	}
	return c
}

// drain runs one side of BenchmarkDrainEvents.
func (e *benchEnv) drain(b *testing.B, run int, events bool) {
	b.Logf("load average at start: %s", procbench.LoadAvg())
	p := startController(b, e.bin, e.kubeconfig, fmt.Sprintf("podsweeper-drain-%d-%t", run, events), true, "--events="+strconv.FormatBool(events))
	p.waitTracked(b, e.pods, 5*time.Minute)
	p.waitChecked(b, e.pods, 2*time.Minute)
	deleted := map[types.UID]bool{}
	for i := range benchDeletes {
		deleted[e.uids[fmt.Sprintf("%s-%05d", benchPrefix, i)]] = true
	}
	before := e.counts(b, p)
	start := time.Now()
	d := e.deleteAndWait(b, p)
	var evs, series, seriesCount int
	var lastEvent time.Duration
	if events {
		if !assert.Eventually(b, func() bool {
			evs, series, seriesCount = e.drainEvents(b, deleted)
			lastEvent = time.Since(start)
			return evs+seriesCount-series >= benchDeletes
		}, 2*time.Minute, 50*time.Millisecond) {
			require.FailNowf(b, "not every Event written", "%d Events, %d series; logs:\n%s", evs, series, p.log.tail())
		}
	}
	after := e.counts(b, p)
	window := time.Since(start)
	if !events {
		evs, series, seriesCount = e.drainEvents(b, deleted)
		require.Zero(b, evs, "--events=false records none")
	}
	var total float64
	per := func(m string) float64 { return (after.byMethod[m] - before.byMethod[m]) / benchDeletes }
	for m := range after.byMethod {
		total += after.byMethod[m] - before.byMethod[m]
	}
	b.ReportMetric(total/benchDeletes, "requests/destroy")
	b.ReportMetric(per("GET"), "get/destroy")
	b.ReportMetric(per("POST"), "post/destroy")
	b.ReportMetric(per("PATCH"), "patch/destroy")
	b.ReportMetric(per("PUT"), "put/destroy")
	b.ReportMetric((after.eventWrites-before.eventWrites)/benchDeletes, "event-writes/destroy")
	b.ReportMetric(float64(evs)/benchDeletes, "events/destroy")
	b.ReportMetric(float64(series)/benchDeletes, "series/destroy")
	b.ReportMetric(ms(d.p50), "ms-p50-delete-to-destroy")
	b.ReportMetric(ms(d.p99), "ms-p99-delete-to-destroy")
	b.ReportMetric(d.last.Seconds(), "s-last-destroy")
	b.ReportMetric(lastEvent.Seconds(), "s-last-event")
	b.ReportMetric(0, "ns/op")
	b.Logf("the %d delete calls took %v; window %v: %.0f requests (%v before, %v after); %d Events, %d of them series counting %d",
		benchDeletes, d.calls.Round(time.Millisecond), window.Round(time.Millisecond), total, before.byMethod, after.byMethod, evs, series, seriesCount)

	e.apply(b, 0, benchDeletes)
	p.waitTracked(b, e.pods, 2*time.Minute)
	p.terminate(b)
	require.Len(b, p.log.destroys(), benchDeletes, "destroys over the process's life; logs:\n%s", p.log.tail())
	b.Logf("load average at end: %s", procbench.LoadAvg())
}

// drainEvents lists the events.k8s.io Events of benchNS that regard one
// of the pods of uids, and returns how many there are, how many of them
// are series, and the count those series hold.
func (e *benchEnv) drainEvents(b *testing.B, uids map[types.UID]bool) (events, series, seriesCount int) {
	b.Helper()
	list, err := e.cs.EventsV1().Events(benchNS).List(b.Context(), metav1.ListOptions{})
	require.NoError(b, err)
	for _, ev := range list.Items {
		if !uids[ev.Regarding.UID] || ev.Reason != k8s.EventReasonDestroyed {
			continue
		}
		events++
		if ev.Series != nil {
			series++
			seriesCount += int(ev.Series.Count)
		}
	}
	return events, series, seriesCount
}

// extrapolateHeap returns the heap that each pod adds between a process
// with n1 pods (heap h1) and one with n2 (heap h2), and the heap
// extrapolated along that line from n2 to n pods: h2 + slope*(n-n2).
func extrapolateHeap(n1 int, h1 int64, n2 int, h2 int64, n int) (slope, at float64) {
	slope = float64(h2-h1) / float64(n2-n1)
	return slope, float64(h2) + slope*float64(n-n2)
}

func TestExtrapolateHeap(t *testing.T) {
	slope, at := extrapolateHeap(5000, 50_000_000, 10000, 80_000_000, 150_000)
	require.InDelta(t, 6000, slope, 1e-9)
	require.InDelta(t, 80_000_000+6000*140_000, at, 1e-3)
	slope, at = extrapolateHeap(5000, 80, 10000, 60, 15000)
	require.InDelta(t, -0.004, slope, 1e-12, "a heap that shrinks gives a negative slope, not a panic")
	require.InDelta(t, 40, at, 1e-9)
}

// benchEnv is what BenchmarkProcess's sub-benchmarks share: the binary,
// the API server and the pod set.
type benchEnv struct {
	bin        string
	kubeconfig string // the ServiceAccount's
	cs         kubernetes.Interface
	md         metadata.Interface   // for the watch of the deletes
	pods       int                  // web-00000 to web-<pods-1>
	uids       map[string]types.UID // of every pod, by name
	// grew says how the pod set last grew, for the next sub-benchmark's
	// log: only the leaves' logs are printed without -v.
	grew  string
	heaps map[string]map[int]int64 // by cache, then by pods
}

// buildController builds the controller's binary once, from this package,
// without -race (procbench.Build).
func buildController(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "cluster-controller")
	procbench.Build(b, path, ".")
	return path
}

func benchNode(i int) string { return fmt.Sprintf("node-%03d", i%benchNodes) }

// apply makes the pods first to first+n-1 and keeps their UIDs.
func (e *benchEnv) apply(b *testing.B, first, n int) {
	b.Helper()
	for name, uid := range procbench.ApplyPods(b, e.cs, benchNS, benchPrefix, first, n, benchNode, false) {
		e.uids[name] = uid
	}
}

// grow applies the pods that the set lacks to hold n.
func (e *benchEnv) grow(b *testing.B, n int) {
	b.Helper()
	before := procbench.LoadAvg()
	start := time.Now()
	e.apply(b, e.pods, n-e.pods)
	took := time.Since(start)
	e.grew = fmt.Sprintf("pods %d to %d applied in %v (%.0f pods/s, spec and status), load average %s before, %s after",
		e.pods, n-1, took.Round(time.Millisecond), float64(n-e.pods)/took.Seconds(), before, procbench.LoadAvg())
	e.pods = n
}

// logSlope logs the heap that each pod added since the largest smaller
// pod set measured with the same cache, and the heap extrapolated along
// that line to extrapolatedPods.
func (e *benchEnv) logSlope(b *testing.B, cache string, n int) {
	n1 := 0
	for m := range e.heaps[cache] {
		if m < n && m > n1 {
			n1 = m
		}
	}
	if n1 == 0 {
		return // the first size, or the smaller left out by -bench
	}
	h1, h2 := e.heaps[cache][n1], e.heaps[cache][n]
	slope, at := extrapolateHeap(n1, h1, n, h2, extrapolatedPods)
	b.Logf("cache=%s: heap %.1f MiB at %d pods, %.1f MiB at %d: %.0f B per added pod; extrapolated to %d pods: %.1f MiB",
		cache, mib(h1), n1, mib(h2), n, slope, extrapolatedPods, at/(1<<20))
}

// measure runs one sub-benchmark (see BenchmarkProcess) on a fresh process
// with the pod cache cache ("full" or "slim") and keeps its heap with every
// pod tracked.
func (e *benchEnv) measure(b *testing.B, cache string) {
	n := e.pods
	if e.grew != "" {
		b.Logf("the pod set: %s", e.grew)
		e.grew = ""
	}
	b.Logf("load average at start: %s", procbench.LoadAvg())
	// A Lease of its own: the process leads at once, whatever became of
	// the previous one's.
	run := fmt.Sprintf("pods-%d-%s", n, cache)
	p := startController(b, e.bin, e.kubeconfig, "podsweeper-bench-"+run, cache == "slim")

	toTracked := p.waitTracked(b, n, 5*time.Minute)
	cpu, err := procbench.CPU(p.cmd.Process.Pid)
	require.NoError(b, err)
	// Each pod's add triggers a check, which reads the pod from the cache:
	// with the full cache, a deep copy of it. Right after all are tracked
	// most of those checks are under way or queued, and their copies
	// double the live heap of a full cache for a second or so. The heap
	// is measured once they are done: the heap the process keeps.
	checked := p.waitChecked(b, n, 2*time.Minute)
	heap, err := procbench.Heap(b.Context(), p.pprofAddr)
	require.NoError(b, err)
	rss, err := procbench.RSS(p.cmd.Process.Pid)
	require.NoError(b, err)
	p.saveHeapProfile(b, run)
	// Once more, to show in the log that the heap measured had settled.
	again, err := procbench.Heap(b.Context(), p.pprofAddr)
	require.NoError(b, err)
	b.Logf("all %d tracked %v after the start, %v of CPU; their first checks done %v after the start; then heap %.1f MiB (%.1f MiB a moment later), RSS %.1f MiB",
		n, toTracked.Round(time.Millisecond), cpu, checked.Round(time.Millisecond), mib(heap), mib(again), mib(rss))

	d := e.deleteAndWait(b, p)
	e.apply(b, 0, benchDeletes)
	toTrackedAgain := p.waitTracked(b, n, 2*time.Minute)
	cpu, err = procbench.CPU(p.cmd.Process.Pid)
	require.NoError(b, err)
	p.terminate(b)
	// Over the process's whole life, its deletes applied again included:
	// the 1,000 destroyed once each, and no other PU.
	require.Len(b, p.log.destroys(), benchDeletes, "destroys over the process's life; logs:\n%s", p.log.tail())

	b.ReportMetric(float64(heap)/float64(n), "heap-B/pod")
	b.ReportMetric(mib(heap), "heap-MiB")
	b.ReportMetric(mib(rss), "rss-MiB")
	b.ReportMetric(toTracked.Seconds(), "s-to-tracked")
	b.ReportMetric(ms(d.p50), "ms-p50-delete-to-destroy")
	b.ReportMetric(ms(d.p99), "ms-p99-delete-to-destroy")
	b.ReportMetric(d.last.Seconds(), "s-last-destroy")
	// The sub-benchmark's wall time is no measure of one thing: 0 drops it.
	b.ReportMetric(0, "ns/op")
	b.Logf("the %d delete calls took %v; the %d pods applied again and tracked %v after the start; %v of CPU in all",
		benchDeletes, d.calls.Round(time.Millisecond), benchDeletes, toTrackedAgain.Round(time.Millisecond), cpu)
	e.heaps[cache][n] = heap
	e.logSlope(b, cache, n)
	b.Logf("load average at end: %s", procbench.LoadAvg())
}

// deleteTimes is what deleteAndWait measured.
type deleteTimes struct {
	p50, p99 time.Duration // from the watch's delete event to the destroy
	last     time.Duration // from the first delete call to the last destroy
	calls    time.Duration // the delete calls, all of them
}

// deleteAndWait deletes the first benchDeletes pods at once, waits until
// the controller has destroyed their PUs, checks that it destroyed each
// once and no other, and returns the times.
func (e *benchEnv) deleteAndWait(b *testing.B, p *controllerProc) deleteTimes {
	b.Helper()
	names := make([]string, benchDeletes)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", benchPrefix, i)
	}
	w := watchDeletes(b, e.md)
	first := time.Now()
	deletePods(b, e.cs, names)
	calls := time.Since(first)
	if !assert.Eventually(b, func() bool { return w.count() == benchDeletes && len(p.log.destroys()) >= benchDeletes || p.exited() },
		2*time.Minute, 50*time.Millisecond) {
		require.FailNowf(b, "not all deleted and destroyed", "%v (of %d); %d destroyed; logs:\n%s",
			w, benchDeletes, len(p.log.destroys()), p.log.tail())
	}
	require.False(b, p.exited(), "the controller exited: %v; logs:\n%s", p.err, p.log.tail())

	destroyed := map[string]destroyLine{}
	for _, l := range p.log.destroys() {
		_, twice := destroyed[l.pod]
		require.False(b, twice, "PU of %s destroyed twice", l.pod)
		destroyed[l.pod] = l
	}
	seen := w.deleted()
	var lat []time.Duration
	var last time.Time
	for _, name := range names {
		l, ok := destroyed[benchNS+"/"+name]
		require.True(b, ok, "the PU of %s destroyed", name)
		require.Equal(b, string(e.uids[name]), l.puid, "the PU of %s is its pod's UID", name)
		deleted, ok := seen[name]
		require.True(b, ok, "the watch saw %s deleted", name)
		lat = append(lat, l.at.Sub(deleted))
		if l.at.After(last) {
			last = l.at
		}
	}
	require.Len(b, destroyed, benchDeletes, "no other PU destroyed")
	left, err := os.ReadDir(p.puDir)
	require.NoError(b, err)
	require.Len(b, left, e.pods-benchDeletes, "the PU files of the live pods are all there")
	if w.lateCount() > 0 {
		// Rare: the API server closed the watch in the burst. Their times
		// are from the re-watch, up to a second or so late, which shortens
		// their delete-to-destroy.
		b.Logf("WARNING: %v", w)
	}
	slices.Sort(lat)
	return deleteTimes{p50: procbench.Percentile(lat, 50), p99: procbench.Percentile(lat, 99), last: last.Sub(first), calls: calls}
}

// deletePods deletes the pods names from benchWorkers goroutines, with a
// grace period of 0: with no kubelet to end them, a pod deleted gracefully
// would stay terminating, and its PU, rightly, would stay.
func deletePods(b *testing.B, cs kubernetes.Interface, names []string) {
	b.Helper()
	next := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for name := range next {
				errs <- cs.CoreV1().Pods(benchNS).Delete(b.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		})
	}
	for _, name := range names {
		next <- name
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
}

// deleteWatch records when a watch of the pods saw each deleted.
type deleteWatch struct {
	mu     sync.Mutex
	seen   map[string]time.Time // by pod name
	starts int                  // watch calls: 1, and one per re-watch
	late   int                  // deletes seen after a re-watch
	errs   []string             // the watch's error events, for a failure's message
	closed bool                 // the watch ended before the sub-benchmark
}

// watchDeletes watches the pods of benchNS from now on (from the resource
// version of a list of one pod: a watch from none, or from "0", would first
// replay every pod) until the sub-benchmark ends. It watches their
// metadata only, in protobuf: the API server closes a watch that falls
// behind a burst of events, and whole pods in JSON are many times the
// bytes to encode. If it closes it all the same, a RetryWatcher watches
// again from the last event: no delete is missed, but those seen after a
// re-watch are seen late, which late counts.
func watchDeletes(b *testing.B, md metadata.Interface) *deleteWatch {
	b.Helper()
	pods := md.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(benchNS)
	list, err := pods.List(b.Context(), metav1.ListOptions{Limit: 1})
	require.NoError(b, err)
	w := &deleteWatch{seen: map[string]time.Time{}}
	rw, err := watchtools.NewRetryWatcherWithContext(b.Context(), list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w.mu.Lock()
			w.starts++
			w.mu.Unlock()
			return pods.Watch(ctx, opts)
		},
	})
	require.NoError(b, err)
	go func() {
		for ev := range rw.ResultChan() {
			w.mu.Lock()
			if p, ok := ev.Object.(*metav1.PartialObjectMetadata); ok && ev.Type == watch.Deleted {
				w.seen[p.Name] = time.Now()
				if w.starts > 1 {
					w.late++
				}
			} else if ev.Type == watch.Error {
				w.errs = append(w.errs, fmt.Sprintf("%v", ev.Object))
			}
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
	}()
	b.Cleanup(func() {
		rw.Stop()
		<-rw.Done()
	})
	return w
}

// String says what the watch saw, for a failure's message.
func (w *deleteWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("the watch saw %d deleted, %d of them after a re-watch; watched %d times, ended: %v, errors: %q",
		len(w.seen), w.late, w.starts, w.closed, w.errs)
}

func (w *deleteWatch) lateCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.late
}

func (w *deleteWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

func (w *deleteWatch) deleted() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.seen)
}

// controllerProc is the controller's binary running as a child process.
type controllerProc struct {
	cmd                    *exec.Cmd
	puDir                  string
	metricsAddr, pprofAddr string
	log                    *childLog
	started                time.Time
	done                   chan struct{} // closed once it has exited
	err                    error         // Wait's, once done is closed
}

// startController runs the binary as the ServiceAccount, with the Lease
// lease of its own, an empty --pu-dir, its metrics and pprof on free
// loopback ports and its logs timed to the nanosecond; it is killed when
// the sub-benchmark ends, if it still runs.
func startController(b *testing.B, bin, kubeconfig, lease string, slim bool, extra ...string) *controllerProc {
	b.Helper()
	p := &controllerProc{puDir: b.TempDir(), metricsAddr: testkube.FreeAddr(b), pprofAddr: testkube.FreeAddr(b),
		log: &childLog{}, done: make(chan struct{})}
	args := append([]string{"--kubeconfig=" + kubeconfig, "--pu-dir=" + p.puDir,
		"--leader-election-namespace=" + leaseNS, "--leader-election-id=" + lease,
		"--metrics-bind-address=" + p.metricsAddr, "--pprof-bind-address=" + p.pprofAddr,
		// Off: nothing probes it, and the default :8081 may be taken.
		"--health-probe-bind-address=0",
		"--slim-pod-cache=" + strconv.FormatBool(slim),
		// The default logger, which keeps every "destroying PU" line
		// (k8s.NewLogger), with its times to the nanosecond.
		"--zap-time-encoding=rfc3339nano"}, extra...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.started = time.Now()
	require.NoError(b, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	b.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *controllerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// metric returns the value of the process's unlabelled metric name (a
// gauge, a counter, or a histogram's name_count), or -1 while its metrics
// endpoint serves none.
func (p *controllerProc) metric(b *testing.B, name string) int {
	return int(procbench.Metric(testkube.Get(b, "http://"+p.metricsAddr+"/metrics"), name))
}

func (p *controllerProc) tracked(b *testing.B) int { return p.metric(b, k8s.MetricTrackedPUs) }

// waitChecked polls the metrics until the process has run n checks (each
// pod's add triggers one), and returns the time from its start until then.
func (p *controllerProc) waitChecked(b *testing.B, n int, timeout time.Duration) time.Duration {
	b.Helper()
	checks := k8s.MetricCheckDuration + "_count"
	var at time.Duration // as in waitTracked
	if !assert.Eventually(b, func() bool {
		done := p.metric(b, checks)
		at = time.Since(p.started)
		return done >= n || p.exited()
	}, timeout, 50*time.Millisecond) {
		require.FailNowf(b, "not all checked", "%d checks of %d; logs:\n%s", p.metric(b, checks), n, p.log.tail())
	}
	require.False(b, p.exited(), "the controller exited: %v; logs:\n%s", p.err, p.log.tail())
	return at
}

// waitTracked polls the metrics every 50 ms until the process tracks n
// PUs, and returns the time from its start until then.
func (p *controllerProc) waitTracked(b *testing.B, n int, timeout time.Duration) time.Duration {
	b.Helper()
	var at time.Duration // written by the condition that returns true, read once it has
	if !assert.Eventually(b, func() bool {
		if p.exited() {
			return true
		}
		tracked := p.tracked(b)
		at = time.Since(p.started)
		return tracked == n
	}, timeout, 50*time.Millisecond) {
		require.FailNowf(b, "not all tracked", "tracked %d of %d; logs:\n%s", p.tracked(b), n, p.log.tail())
	}
	require.False(b, p.exited(), "the controller exited: %v; logs:\n%s", p.err, p.log.tail())
	return at
}

// saveHeapProfile writes the process's heap profile, after a GC, to
// heap-<run>.pb.gz in -heap-profile-dir, if set.
func (p *controllerProc) saveHeapProfile(b *testing.B, run string) {
	b.Helper()
	if *heapProfileDir == "" {
		return
	}
	resp, err := http.Get("http://" + p.pprofAddr + "/debug/pprof/heap?gc=1")
	require.NoError(b, err)
	defer resp.Body.Close()
	require.Equal(b, http.StatusOK, resp.StatusCode)
	path := filepath.Join(*heapProfileDir, "heap-"+run+".pb.gz")
	f, err := os.Create(path)
	require.NoError(b, err)
	_, err = io.Copy(f, resp.Body)
	require.NoError(b, err)
	require.NoError(b, f.Close())
	b.Logf("heap profile: %s", path)
}

// terminate stops the process with SIGTERM, as a rollout does, and checks
// that it exits cleanly (the Lease released).
func (p *controllerProc) terminate(b *testing.B) {
	b.Helper()
	require.NoError(b, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		require.NoError(b, p.err, "logs:\n%s", p.log.tail())
	case <-time.After(30 * time.Second):
		require.Fail(b, "the controller did not stop on SIGTERM", "logs:\n%s", p.log.tail())
	}
}

// destroyLine is a "destroying PU" line of the controller's log.
type destroyLine struct {
	puid, pod string // pod: namespace/name
	at        time.Time
}

// childLog keeps what a child process writes, and reads the "destroying
// PU" lines (pudir.go) as they come, so that waiting for them does not
// parse the whole log again at each poll.
type childLog struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte // the line being written
	lines   []destroyLine
}

func (l *childLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.parse(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
}

// parse keeps line if it is a "destroying PU" line. One that does not
// decode is kept with a zero time and no pod, which the checks report.
func (l *childLog) parse(line []byte) {
	if !bytes.Contains(line, []byte(`"destroying PU"`)) {
		return
	}
	var v struct {
		TS   time.Time `json:"ts"`
		Msg  string    `json:"msg"`
		PUID string    `json:"puID"`
		Pod  string    `json:"pod"`
	}
	if json.Unmarshal(line, &v) != nil || v.Msg != "destroying PU" {
		l.lines = append(l.lines, destroyLine{pod: "(undecodable) " + string(line)})
		return
	}
	l.lines = append(l.lines, destroyLine{puid: v.PUID, pod: v.Pod, at: v.TS})
}

func (l *childLog) destroys() []destroyLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// tail returns the end of the log, for a failure's message: the whole of
// it may hold thousands of lines.
func (l *childLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	const tailBytes = 8 << 10
	s := l.all.String()
	if len(s) > tailBytes {
		return "...\n" + s[len(s)-tailBytes:]
	}
	return s
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
