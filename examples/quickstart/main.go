package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

const (
	// thisNode is the node our agent runs on.
	thisNode  = "node-a"
	namespace = "shop"

	// The engine's timings, short for the story; an agent keeps the
	// defaults (5s, 1s, 1m).
	sweepInterval = 200 * time.Millisecond
	retryMinDelay = 100 * time.Millisecond
	retryMaxDelay = 400 * time.Millisecond

	// waitLimit bounds every wait for an event: one that does not come
	// within it fails the story.
	waitLimit = 3 * time.Second
)

func main() {
	verbose := flag.Bool("v", false, "print the engine's own logs (V(1) included) on stderr")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := runStory(ctx, os.Stdout, engineLogger(*verbose, os.Stderr))
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	if failed := res.Check(); len(failed) > 0 {
		fmt.Fprintln(os.Stderr, "quickstart: the engine did not do what the story expects:")
		for _, f := range failed {
			fmt.Fprintln(os.Stderr, "  -", f)
		}
		os.Exit(1)
	}
}

// story holds what the scenes share: the cluster, the agent's policy
// engine, the podsweeper engine, and the timeline that observes it.
type story struct {
	ctx     context.Context
	cluster *cluster
	policy  *policyEngine
	engine  *deletion.Engine
	tl      *timeline

	mu       sync.Mutex
	requeued []string // PUIDs the Requeuer tracked again
}

// runStory plays the story, printing its timeline on w, and returns what
// happened. The engine logs to log.
func runStory(ctx context.Context, w io.Writer, log logr.Logger) (Result, error) {
	tl := newTimeline(w)
	s := &story{ctx: ctx, cluster: newCluster(), tl: tl}
	s.policy = &policyEngine{tl: tl, fail: map[string][]error{}}

	// The engine, wired as a node agent wires it: the pod cache as its
	// PodGetter, a direct read of the API server as its Confirmer, the
	// container runtime as its SandboxExtractor, and the agent's pod
	// controller as its Requeuer.
	engine, err := deletion.New(s.cluster.cacheReader(), s.policy, deletion.Options{
		NodeName:          thisNode,
		Confirmer:         s.cluster.apiReader(),
		SandboxExtractor:  s.cluster.runtime(),
		Requeuer:          ports.RequeuerFunc(s.requeue),
		DestroyTerminated: true,
		SweepInterval:     sweepInterval,
		RetryMinDelay:     retryMinDelay,
		RetryMaxDelay:     retryMaxDelay,
		Observer:          tl,
		Logger:            log,
	})
	if err != nil {
		return Result{}, err
	}
	s.engine = engine

	// Start runs the engine in the background, as an agent does: a check
	// of every PU once per SweepInterval, and at once on TriggerPod.
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- engine.Start(runCtx) }()
	defer func() {
		stop()
		<-stopped
	}()

	fmt.Fprintf(w, "podsweeper quickstart: an agent on %s, its engine started (SweepInterval %v, retries after %v to %v).\n",
		thisNode, sweepInterval, retryMinDelay, retryMaxDelay)
	fmt.Fprintf(w, "Every check prints the row of the decision table that decided, and its words.\n")
	for i, scene := range []struct {
		title string
		play  func() error
	}{
		{"web-0 is deleted: its PU goes (row 1).", s.podDeleted},
		{"batch-0 is deleted and comes back under its name on node-b: its PU here goes (row 3).", s.podMoved},
		{"db-0 is recreated under its name on this node, as a StatefulSet does: the old pod's PU goes (row 4).", s.podRecreated},
		{"job-0 finishes; with DestroyTerminated its PU goes while the pod object stays (row 11).", s.podFinished},
		{"cart-0's sandbox, as the container runtime reports it (rows 6, 8, 7, 9, 10), then Untrack.", s.sandboxLife},
		{"api-0: failed reads keep the PU (row 2); its delete event is lost, a periodic check finds it (row 1).", s.failedReads},
		{"report-0: the policy engine fails the first destroy; it is retried after its backoff, not before.", s.destroyRetried},
		{"legacy-0: the policy engine answers ports.Permanent: the PU is abandoned, not retried.", s.destroyPermanent},
		{"new-0: the cache lags; the Confirmer vetoes a destroy on the cache's NotFound (row 1 -> row 9).", s.confirmerVeto},
	} {
		tl.header("%d. %s", i+1, scene.title)
		if err := scene.play(); err != nil {
			return Result{}, fmt.Errorf("scene %d: %w", i+1, err)
		}
	}

	health := "ok"
	if err := engine.ReadinessCheck(nil); err != nil {
		health = err.Error()
	}
	res := s.result()
	fmt.Fprintf(w, "\n%s", res.Summary())
	fmt.Fprintf(w, "  readiness:     %s; PUs still tracked: %d\n", health, engine.Len())
	return res, nil
}

// createPU is the agent's pod controller: it creates the PU of pod in the
// policy engine (not shown), with the sandbox the runtime reports if it
// does, and tells the engine to track it.
func (s *story) createPU(pod *corev1.Pod) error {
	sandbox, _ := s.cluster.runtime().SandboxID(s.ctx, pod)
	return s.engine.Track(ports.PU{PUID: string(pod.UID), Pod: keyOf(pod), SandboxID: sandbox})
}

// requeue is the Requeuer: the engine hands back a pod whose PU it
// destroyed for a sandbox change, and the pod controller creates the PU of
// the new sandbox.
func (s *story) requeue(_ context.Context, pod *corev1.Pod) error {
	s.mu.Lock()
	s.requeued = append(s.requeued, string(pod.UID))
	s.mu.Unlock()
	s.tl.agentSays(string(pod.UID), "Requeue     %-13s the agent creates the PU of the new sandbox", pod.UID)
	return s.createPU(pod)
}

// event is the agent's informer handler: a pod event triggers a check of
// that pod's PUs at once.
func (s *story) event(key types.NamespacedName, what string) {
	s.tl.say("event       %-13s %s: TriggerPod", key.Name, what)
	s.engine.TriggerPod(key)
}

// step edits the cluster with change (nil: no change), delivers the pod
// event of key if what is not "", and waits for the check of puid decided
// by row.
func (s *story) step(change func(), key types.NamespacedName, what, puid string, row int) error {
	from := s.tl.mark()
	if change != nil {
		s.cluster.edit(change)
	}
	if what != "" {
		s.event(key, what)
	}
	_, err := s.tl.await(s.ctx, from, fmt.Sprintf("a check of %s decided by row %d", puid, row), checked(puid, row))
	return err
}

// run creates pod in the API server, delivers it to the cache, gives it
// sandbox in the runtime, and creates and tracks its PU.
func (s *story) run(pod *corev1.Pod, sandbox string) error {
	s.cluster.edit(func() {
		s.cluster.put(pod)
		s.cluster.sync(keyOf(pod))
		s.cluster.sandboxes[pod.UID] = sandbox
	})
	return s.createPU(pod)
}

func (s *story) podDeleted() error {
	pod := newPod("web-0", "uid-web-0", thisNode)
	if err := s.run(pod, "sb-web-0"); err != nil {
		return err
	}
	return s.step(func() { s.cluster.remove(keyOf(pod)); s.cluster.sync(keyOf(pod)) }, keyOf(pod), "deleted", "uid-web-0", 1)
}

func (s *story) podMoved() error {
	pod := newPod("batch-0", "uid-batch-0", thisNode)
	if err := s.run(pod, "sb-batch-0"); err != nil {
		return err
	}
	return s.step(func() {
		s.cluster.put(newPod("batch-0", "uid-batch-0-b", "node-b"))
		s.cluster.sync(keyOf(pod))
	}, keyOf(pod), "deleted, then added on node-b", "uid-batch-0", 3)
}

func (s *story) podRecreated() error {
	pod := newPod("db-0", "uid-db-0", thisNode)
	if err := s.run(pod, "sb-db-0"); err != nil {
		return err
	}
	// The agent would create the new pod's PU on its add event; this
	// scene leaves it out.
	return s.step(func() {
		s.cluster.put(newPod("db-0", "uid-db-0-b", thisNode))
		s.cluster.sync(keyOf(pod))
	}, keyOf(pod), "deleted, then added with another UID", "uid-db-0", 4)
}

func (s *story) podFinished() error {
	pod := newPod("job-0", "uid-job-0", thisNode)
	if err := s.run(pod, "sb-job-0"); err != nil {
		return err
	}
	return s.step(func() {
		done := pod.DeepCopy()
		done.Status.Phase = corev1.PodSucceeded
		s.cluster.put(done)
		s.cluster.sync(keyOf(pod))
	}, keyOf(pod), "phase Succeeded", "uid-job-0", 11)
}

func (s *story) sandboxLife() error {
	pod := newPod("cart-0", "uid-cart-0", thisNode)
	key, puid := keyOf(pod), "uid-cart-0"
	// The runtime does not answer yet: the agent creates the PU without a sandbox.
	if err := s.run(pod, ""); err != nil {
		return err
	}
	errRuntime := errors.New("rpc error: code = Unavailable desc = connection refused")
	if err := s.step(func() { s.cluster.runtimeErr[pod.UID] = errRuntime }, key, "updated", puid, 6); err != nil {
		return err
	}
	if err := s.step(func() { delete(s.cluster.runtimeErr, pod.UID) }, key, "updated", puid, 8); err != nil {
		return err
	}
	if err := s.step(func() { s.cluster.sandboxes[pod.UID] = "sb-cart-1" }, key, "updated", puid, 7); err != nil {
		return err
	}
	if err := s.step(nil, key, "updated", puid, 9); err != nil {
		return err
	}
	// The sandbox restarts: same pod, new network namespace. The PU of the
	// old sandbox goes, and the Requeuer has the agent track the new one.
	if err := s.step(func() { s.cluster.sandboxes[pod.UID] = "sb-cart-2" }, key, "updated", puid, 10); err != nil {
		return err
	}
	if err := s.step(nil, key, "updated", puid, 9); err != nil {
		return err
	}
	// cart-0 is deleted, and this agent tears its PU down itself on the
	// delete event: Untrack tells the engine to forget it, and nothing is
	// destroyed twice. The TriggerPod that follows finds nothing tracked.
	s.cluster.edit(func() { s.cluster.remove(key); s.cluster.sync(key) })
	s.tl.say("agent       %-13s pod deleted: the agent tears the PU down itself and calls Untrack", puid)
	if !s.engine.Untrack(puid) {
		return fmt.Errorf("Untrack(%s): not tracked", puid)
	}
	s.event(key, "deleted")
	return nil
}

func (s *story) failedReads() error {
	pod := newPod("api-0", "uid-api-0", thisNode)
	key, puid := keyOf(pod), "uid-api-0"
	errCache := errors.New("pod cache: timed out waiting for the informer to sync")
	s.cluster.edit(func() { s.cluster.cacheErr = errCache })
	if err := s.run(pod, "sb-api-0"); err != nil {
		return err
	}
	if err := s.step(nil, key, "updated", puid, 2); err != nil {
		return err
	}
	// Meanwhile api-0 is deleted and the agent never sees its delete
	// event: no TriggerPod. Once the cache answers again, the periodic
	// check (once per SweepInterval) finds the pod gone.
	s.tl.say("cluster     %-13s deleted while the cache failed, its delete event lost; the cache recovers", key.Name)
	return s.step(func() {
		s.cluster.cacheErr = nil
		s.cluster.remove(key)
		s.cluster.sync(key)
	}, key, "", puid, 1)
}

func (s *story) destroyRetried() error {
	pod := newPod("report-0", "uid-report-0", thisNode)
	key, puid := keyOf(pod), "uid-report-0"
	if err := s.run(pod, "sb-report-0"); err != nil {
		return err
	}
	s.policy.failNext(puid, errors.New("policy engine: busy, try again"))
	if err := s.step(func() { s.cluster.remove(key); s.cluster.sync(key) }, key, "deleted", puid, 1); err != nil {
		return err
	}
	// Another event of the pod does not hurry the retry; Status says why
	// the PU is still here.
	from := s.tl.mark()
	s.event(key, "deleted (again)")
	for _, st := range s.engine.Status() {
		s.tl.say("Status      %-13s %s, %d failed attempt(s), next at %s, last error %q",
			st.PUID, st.State, st.Attempts, at(st.NextAttempt.Sub(s.tl.start)), st.LastErr)
	}
	_, err := s.tl.await(s.ctx, from, "the retried destroy of "+puid, checked(puid, 1))
	return err
}

func (s *story) destroyPermanent() error {
	pod := newPod("legacy-0", "uid-legacy-0", thisNode)
	key, puid := keyOf(pod), "uid-legacy-0"
	if err := s.run(pod, "sb-legacy-0"); err != nil {
		return err
	}
	s.policy.failNext(puid, ports.Permanent(errors.New("policy engine: PU created by an older agent, cannot be read")))
	return s.step(func() { s.cluster.remove(key); s.cluster.sync(key) }, key, "deleted", puid, 1)
}

func (s *story) confirmerVeto() error {
	pod := newPod("new-0", "uid-new-0", thisNode)
	key, puid := keyOf(pod), "uid-new-0"
	// The runtime starts the pod's sandbox and the agent creates its PU
	// before the informer has delivered the pod to the cache.
	s.cluster.edit(func() {
		s.cluster.put(pod)
		s.cluster.sandboxes[pod.UID] = "sb-new-0"
	})
	if err := s.createPU(pod); err != nil {
		return err
	}
	if err := s.step(nil, key, "sandbox started (CRI)", puid, 9); err != nil {
		return err
	}
	// The cache catches up: the cache's answer keeps the PU by itself.
	if err := s.step(func() { s.cluster.sync(key) }, key, "added", puid, 9); err != nil {
		return err
	}
	// new-0 is deleted; once the informer delivers it, cache and API
	// server agree, and the PU goes.
	return s.step(func() { s.cluster.remove(key); s.cluster.sync(key) }, key, "deleted", puid, 1)
}

// Destroy is one PU the policy engine destroyed, or gave up on.
type Destroy struct {
	PUID   string
	Reason ports.Reason
}

// Veto is one destroy the Confirmer did not confirm.
type Veto struct {
	PUID   string
	Reason ports.Reason // the reason the cache's answer gave
	Row    int          // the row of the Confirmer's answer
}

// Result is what happened during the story.
type Result struct {
	Destroys  []Destroy        // successful DestroyPU calls, in order
	Rows      map[string][]int // by PUID: the row of each of its checks, in order
	Failed    []Destroy        // failed DestroyPU calls, in order
	RetryWait time.Duration    // from the failed DestroyPU of report-0 to its retry
	Abandoned []Destroy
	Vetoes    []Veto
	Untracked []ports.PU
	Requeued  []string // PUIDs tracked again by the Requeuer
	Elapsed   time.Duration
}

// result gathers what the engine did from the timeline and the policy engine.
func (s *story) result() Result {
	res := Result{Rows: map[string][]int{}, Elapsed: s.tl.now()}
	for _, ev := range s.tl.snapshot() {
		e := ev.PU
		switch ev.Kind {
		case deletion.EventChecked:
			res.Rows[e.PUID] = append(res.Rows[e.PUID], ev.Verdict.Row)
		case deletion.EventAbandoned:
			res.Abandoned = append(res.Abandoned, Destroy{e.PUID, ev.Reason})
		case deletion.EventVetoed:
			res.Vetoes = append(res.Vetoes, Veto{e.PUID, ev.Reason, ev.Verdict.Row})
		case deletion.EventUntracked:
			res.Untracked = append(res.Untracked, e)
		}
	}
	s.mu.Lock()
	res.Requeued = append(res.Requeued, s.requeued...)
	s.mu.Unlock()
	s.policy.mu.Lock()
	defer s.policy.mu.Unlock()
	var failedAt time.Duration
	for _, c := range s.policy.calls {
		d := Destroy{c.ev.PUID, c.ev.Reason}
		switch {
		case c.err == nil:
			res.Destroys = append(res.Destroys, d)
			if c.ev.PUID == "uid-report-0" {
				res.RetryWait = c.at - failedAt
			}
		default:
			res.Failed = append(res.Failed, d)
			if c.ev.PUID == "uid-report-0" {
				failedAt = c.at
			}
		}
	}
	return res
}

// Summary returns the totals of res, a line each.
func (res Result) Summary() string {
	var b strings.Builder
	byReason := map[ports.Reason]int{}
	for _, d := range res.Destroys {
		byReason[d.Reason]++
	}
	var counts []string
	for _, r := range ports.Reasons() {
		if byReason[r] > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", r, byReason[r]))
		}
	}
	fmt.Fprintf(&b, "Summary after %v:\n", res.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  destroyed:     %d (%s)\n", len(res.Destroys), strings.Join(counts, ", "))
	fmt.Fprintf(&b, "  retried:       %d failed destroy(s), retried after %v\n", len(res.Failed)-len(res.Abandoned), res.RetryWait.Round(time.Millisecond))
	fmt.Fprintf(&b, "  abandoned:     %d, vetoed: %d, untracked: %d\n", len(res.Abandoned), len(res.Vetoes), len(res.Untracked))
	return b.String()
}

// The story's expectations, checked by Check.
var (
	wantDestroys = []Destroy{
		{"uid-web-0", ports.ReasonPodGone},
		{"uid-batch-0", ports.ReasonNodeChanged},
		{"uid-db-0", ports.ReasonUIDChanged},
		{"uid-job-0", ports.ReasonPodTerminated},
		{"uid-cart-0", ports.ReasonSandboxChanged},
		{"uid-api-0", ports.ReasonPodGone},
		{"uid-report-0", ports.ReasonPodGone},
		{"uid-new-0", ports.ReasonPodGone},
	}
	wantFailed    = []Destroy{{"uid-report-0", ports.ReasonPodGone}, {"uid-legacy-0", ports.ReasonPodGone}}
	wantAbandoned = []Destroy{{"uid-legacy-0", ports.ReasonPodGone}}
	wantUntracked = []ports.PU{{PUID: "uid-cart-0", Pod: types.NamespacedName{Namespace: namespace, Name: "cart-0"}, SandboxID: "sb-cart-2"}}
	wantRequeued  = []string{"uid-cart-0"}
	// wantRows are the rows of the checks the story asks for, by PUID.
	wantRows = map[string][]int{
		"uid-web-0":    {1},
		"uid-batch-0":  {3},
		"uid-db-0":     {4},
		"uid-job-0":    {11},
		"uid-cart-0":   {6, 8, 7, 9, 10, 9},
		"uid-api-0":    {2, 1},
		"uid-report-0": {1, 1},
		"uid-legacy-0": {1},
		"uid-new-0":    {9, 9, 1},
	}
	wantVeto = Veto{"uid-new-0", ports.ReasonPodGone, 9}
)

// Check returns every way in which res differs from what the story expects.
func (res Result) Check() []string {
	var failed []string
	diff := func(what string, got, want any) {
		if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
			failed = append(failed, fmt.Sprintf("%s: got %s, want %s", what, g, w))
		}
	}
	diff("destroys", res.Destroys, wantDestroys)
	diff("failed destroys", res.Failed, wantFailed)
	diff("abandoned", res.Abandoned, wantAbandoned)
	diff("untracked", res.Untracked, wantUntracked)
	diff("requeued", res.Requeued, wantRequeued)
	if len(res.Rows) != len(wantRows) {
		failed = append(failed, fmt.Sprintf("checked PUs: got %d (%v), want %d", len(res.Rows), res.Rows, len(wantRows)))
	}
	for puid, want := range wantRows {
		if got := res.Rows[puid]; !RowsMatch(got, want) {
			failed = append(failed, fmt.Sprintf("rows of %s: got %v, want %v (and periodic keeps)", puid, got, want))
		}
	}
	if len(res.Vetoes) == 0 {
		failed = append(failed, "no veto")
	}
	for _, v := range res.Vetoes {
		diff("veto", v, wantVeto)
	}
	if res.RetryWait < retryMinDelay {
		failed = append(failed, fmt.Sprintf("the failed destroy was retried after %v, before its backoff of %v", res.RetryWait, retryMinDelay))
	}
	return failed
}

// RowsMatch reports whether the rows got of a PU's checks are the rows
// want the story asks for, in order, give or take keeps: the engine checks
// every PU once per SweepInterval, whatever the story does, and such a
// periodic check may come between two of the story's and keep the PU
// (rows 2, 5, 6, 8, 9). A row that destroys, adopts, or is missing, out
// of place, does not match.
func RowsMatch(got, want []int) bool {
	i := 0
	for _, row := range got {
		switch {
		case i < len(want) && row == want[i]:
			i++
		case row == 2 || row == 5 || row == 6 || row == 8 || row == 9:
		default:
			return false
		}
	}
	return i == len(want)
}
