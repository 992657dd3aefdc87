package main

// A program whose engine has ended (its Start returned: the program stops, its pod in its grace period) is told as
// ended, not as a standby, and no check is said to be coming on what it holds.

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// explain.md: "a program's pod being deleted still runs its grace period, and is asked"; k8s.EngineHeader:
// EngineEnded for an engine whose Start has returned. A node agent whose engine ended lists the PU it held: explain
// pod tells it ended, that no check runs on the PU, and names no leader of a node agent.
func TestExplainPodOfAnEngineThatEndedSaysSoAndNoCheckComes(t *testing.T) {
	alive := workloadPod("apps", "web", firstUID, "node-a")
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return alive.DeepCopy(), nil })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", SweepInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	if err := eng.Track(ports.PU{PUID: firstUID, Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-returned
	x := explainOfAgent(t, eng, alive)
	text, js := podTextAndJSON(t, x)
	if len(x.Answers) != 1 || len(x.Answers[0].PUs) != 1 {
		t.Fatalf("scenario: want the agent's page with its PU:\n%s", text)
	}
	wantSays(t, "explain pod", text, "(its engine has ended: no check runs)")
	wantSays(t, "explain pod", text, "held, and no check runs on it: its engine has ended")
	wantSays(t, "the JSON", js, `"ended": true`)
	wantNotSays(t, "explain pod", text, "a standby")
	wantNotSays(t, "explain pod", text, "waiting for its next check")
	wantNotSays(t, "explain pod", text, "the leader of")
}

// explainIPOfCNIGC is explain ip of 10.88.0.4, held by an attachment of apps/web whose PU cni-gc holds, its status
// page telling engine (k8s.EngineHeader): its text and JSON.
func explainIPOfCNIGC(t *testing.T, engine string) (string, string) {
	read := clockNow.Add(-12 * time.Second)
	api := newFakeCluster(t, runningProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a"),
		workloadPod("apps", "web", firstUID, "node-a"))
	api.handle("kube-system/cni-a", servePages(clockNow, engine, map[string]rawAnswer{
		k8s.StatusPath: {code: 200, body: mustJSON(t, []k8s.PUStatus{idlePU(firstUID, "apps/web")})},
		addressPath:    {code: 200, body: mustJSON(t, heldAddress(&read))},
	}))
	x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	return ipTextAndJSON(t, x)
}

// The same for explain ip: cni-gc whose engine ended tells so, and its PU of the address's pod with no check coming.
func TestExplainIPOfACNIGCWhoseEngineEndedSaysSo(t *testing.T) {
	text, js := explainIPOfCNIGC(t, k8s.EngineEnded)
	wantSays(t, "explain ip", text, "its engine has ended")
	wantSays(t, "explain ip", text, "held, and no check runs on it: its engine has ended")
	wantSays(t, "the JSON", js, `"ended": true`)
	wantNotSays(t, "explain ip", text, "waiting for its next check")
}

// heldAddress is cni-gc's answer for 10.88.0.4, held by an attachment of apps/web; read: when its sweep last read
// host-local's reservations (nil: never yet).
func heldAddress(read *time.Time) *AddressStatus {
	return &AddressStatus{IP: "10.88.0.4", ReservationsRead: read, Attachments: []AttachmentStatus{{
		Network: "podnet", ContainerID: "3a9f0c1b2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8", IfName: "eth0",
		PodNamespace: "apps", PodName: "web", PodUID: firstUID, Written: clockNow.Add(-4 * time.Minute)}}}
}

// A PU whose destroy failed, held by an engine that has ended, has no next attempt coming: explain pod, status and
// explain ip say none is planned, whatever its page's nextAttempt says.
func TestAnEngineThatEndedPlansNoNextAttempt(t *testing.T) {
	checked, next := clockNow.Add(-2*time.Second), clockNow.Add(time.Hour)
	pu := k8s.PUStatus{PUID: firstUID, Pod: "apps/web", State: "waiting for a retry", Age: "3m0s", LastChecked: &checked,
		LastRow: 1, Why: "pod not found", Attempts: 1, NextAttempt: &next, LastError: "the policy engine is unreachable"}
	read := clockNow.Add(-12 * time.Second)
	api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a"))
	api.handle("podsweeper/agent-a", servePages(clockNow, k8s.EngineEnded, map[string]rawAnswer{k8s.StatusPath: {code: 200, body: mustJSON(t, []k8s.PUStatus{pu})}}))
	api.handle("kube-system/cni-a", servePages(clockNow, k8s.EngineEnded, map[string]rawAnswer{
		k8s.StatusPath: {code: 200, body: mustJSON(t, []k8s.PUStatus{pu})},
		addressPath:    {code: 200, body: mustJSON(t, heldAddress(&read))},
	}))
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	text := podText(t, x)
	wantSays(t, "explain pod", text, "1 destroy call(s) failed; none planned: no check runs")
	wantNotSays(t, "explain pod", text, "next in")
	wantNotSays(t, "status", statusText(t, api.cluster(5*time.Second), "node-a", clockNow), "in 1h")
	ip, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	ipOut := ipText(t, ip)
	wantSays(t, "explain ip", ipOut, "none planned: no check runs")
	wantNotSays(t, "explain ip", ipOut, "next in")
}

// A PU an earlier round of explain pod read, which the last round finds in no answer, is accounted for only by an
// Event written since that round read it: the destroy of the pod's earlier sandbox's PU, of the same PUID, which that
// round read too, is not what became of it, and the answer cannot tell; a new Event, or that one's series grown
// since, is. No clock is compared: each program posts its Events on its own, which may be minutes off the clock of the
// program that held the PU (the Event's time here is long before the round, or after it, and tells nothing).
func TestOnlyAnEventWrittenSinceTheRoundThatReadAPUAccountsForIt(t *testing.T) {
	earlier := map[string][]earlierPU{firstUID: {{what: "PU " + firstUID, events: map[string]int{"apps/web.old": 1}}}}
	for _, c := range []struct {
		key   string
		count int
		at    time.Time
		told  bool
	}{
		{"apps/web.old", 1, clockNow.Add(time.Hour), false},       // read by that round: of the earlier sandbox's PU
		{"apps/web.old", 2, clockNow.Add(-time.Hour), true},       // its series grew since
		{"apps/web.new", 1, clockNow.Add(-2 * time.Minute), true}, // written since, by a program whose clock is behind
	} {
		x := &PodExplanation{Now: clockNow, Namespace: "apps", Name: "web", Answers: []Answer{{At: clockNow}},
			Events: []Event{{Time: c.at, Type: "Normal", Reason: k8s.EventReasonDestroyed, Regarding: "Pod/apps/web", Count: c.count,
				uid: firstUID, pod: "apps/web", key: c.key}}}
		if got := gone(x, earlier); (len(got) == 0) != c.told {
			t.Errorf("the Event %s (count %d): not accounted for %v, want accounted for %v", c.key, c.count, got, c.told)
		}
	}
}

// explain.md: each program's PU of a pod is its own. Two programs that held PUs of one pod (one PUID, the pod's UID)
// when an earlier round read them are each accounted for by that program's answer, or by an Event of a kind that
// program posts: the node agent still holding its PU, or its destroy's Event, says nothing of cni-gc's, which posts
// none.
func TestEachProgramsPUOfAPodIsAccountedForByItsOwn(t *testing.T) {
	agent := Program{Program: "node-agent", Release: "podsweeper", Namespace: "podsweeper", Pod: "na-a", Node: "node-a"}
	gc := Program{Program: "cni-gc", Release: "podsweeper", Namespace: "podsweeper", Pod: "gc-a", Node: "node-a"}
	earlier := map[string][]earlierPU{firstUID: {{program: agent, what: "PU of the agent", events: map[string]int{}}, {program: gc, what: "PU of cni-gc", events: map[string]int{}}}}
	held := []k8s.PUStatus{{PUID: firstUID, Pod: "apps/web"}}
	destroyed := Event{Time: clockNow, Type: "Normal", Reason: k8s.EventReasonDestroyed, Regarding: "Pod/apps/web", Count: 1, uid: firstUID,
		pod: "apps/web", timeExact: true, key: "apps/web.destroyed"}
	for name, c := range map[string]struct {
		agentHolds, gcHolds bool
		events              []Event
		want                []string
	}{
		"the agent holds it, cni-gc not":          {agentHolds: true, want: []string{"PU of cni-gc"}},
		"cni-gc holds it, the agent not":          {gcHolds: true, want: []string{"PU of the agent"}},
		"the agent destroyed it, cni-gc holds it": {gcHolds: true, events: []Event{destroyed}},
		"the agent destroyed it, cni-gc not":      {events: []Event{destroyed}, want: []string{"PU of cni-gc"}},
		"neither holds it, no Event":              {want: []string{"PU of the agent", "PU of cni-gc"}},
		"both hold it, cni-gc restarted since":    {agentHolds: true, gcHolds: true},
	} {
		t.Run(name, func(t *testing.T) {
			a, g := Answer{Program: agent, At: clockNow}, Answer{Program: gc, At: clockNow}
			if c.agentHolds {
				a.PUs = held
			}
			if c.gcHolds {
				g.PUs = held
				g.Program.Pod = "gc-b" // its pod is another: the same program, restarted
			}
			x := &PodExplanation{Now: clockNow, Namespace: "apps", Name: "web", Answers: []Answer{a, g}, Events: c.events}
			got := gone(x, earlier)
			for i, w := range c.want {
				if i >= len(got) || !strings.HasPrefix(got[i], w) {
					t.Fatalf("want %q unaccounted for, got %q", c.want, got)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("want %q unaccounted for, got %q", c.want, got)
			}
		})
	}
}

// explain.md: "Each program's PU is its own". An Event does not say which program posted it: the node agent and the
// cluster controller both held PUs of the pod and both are gone; one PUDestroyed since accounts for one of them, not
// both, and the answer cannot tell whose: it names both. Two account for both.
func TestOneEventAccountsForOnePUOfTwoProgramsThatPostThem(t *testing.T) {
	agent := Program{Program: "node-agent", Release: "podsweeper", Namespace: "podsweeper", Pod: "na-a", Node: "node-a"}
	controller := Program{Program: "cluster-controller", Release: "podsweeper-cluster", Namespace: "podsweeper", Pod: "cc-1"}
	earlier := map[string][]earlierPU{firstUID: {{program: agent, what: "PU of the agent", events: map[string]int{}},
		{program: controller, what: "PU of the controller", events: map[string]int{}}}}
	destroyed := Event{Time: clockNow, Type: "Normal", Reason: k8s.EventReasonDestroyed, Regarding: "Pod/apps/web", Count: 1, uid: firstUID,
		pod: "apps/web", timeExact: true, key: "apps/web.destroyed"}
	answers := []Answer{{Program: agent, At: clockNow}, {Program: controller, At: clockNow}}
	one := gone(&PodExplanation{Now: clockNow, Namespace: "apps", Name: "web", Answers: answers, Events: []Event{destroyed}}, earlier)
	if len(one) != 2 {
		t.Errorf("one Event of two PUs gone: %q, want both named", one)
	}
	two := gone(&PodExplanation{Now: clockNow, Namespace: "apps", Name: "web", Answers: answers, Events: []Event{destroyed, destroyed}}, earlier)
	if len(two) != 0 {
		t.Errorf("two Events of two PUs gone: %q, want none named", two)
	}
}

// deletion.Engine.InventoryListed; explain.md: a program that cannot be asked is named, and the answer cannot tell
// all. A node agent whose engine ended while its Inventory's PUs went in (its journal slow to commit the first) left
// the pod's PU in the Inventory: the agent's page cannot tell what it holds, so explain pod says it could not be asked
// and never says podsweeper knows nothing of the pod.
func TestAnEngineThatEndedMidRestoreCannotTell(t *testing.T) {
	alive := workloadPod("apps", "web", firstUID, "node-a")
	other := ports.PU{PUID: "6f1c2a4e-0000-0000-0000-00000000000b", Pod: types.NamespacedName{Namespace: "apps", Name: "other"}}
	web := ports.PU{PUID: firstUID, Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return []ports.PU{other, web}, nil })
	committing, commit := make(chan struct{}), make(chan struct{})
	var once sync.Once
	journal := deletion.ObserverFunc(func(ev deletion.Event) {
		if ev.Kind == deletion.EventTracked {
			once.Do(func() { close(committing); <-commit })
		}
	})
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return alive.DeepCopy(), nil })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", Inventory: inv, Observer: journal, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { _ = eng.Start(ctx); close(returned) }()
	<-committing
	cancel() // Start's context is done: the PUs after the first are left for the next run
	close(commit)
	<-returned
	x := explainOfAgent(t, eng, alive)
	text := podText(t, x)
	wantNotSays(t, "explain pod", text, "knows nothing")
	wantSays(t, "explain pod", text, "could not be asked")
	wantSays(t, "explain pod", text, "cannot tell all")
}

// explainOfAgent is explain pod apps/web on a cluster of alive and the node agent agent-a of node-a, which serves
// eng's status page.
func explainOfAgent(t *testing.T, eng *deletion.Engine, alive *corev1.Pod) *PodExplanation {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(eng))
	api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), alive)
	api.handle("podsweeper/agent-a", mux)
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// eventOf tells an Event's times' precision: an eventTime and a series' lastObservedTime are in microseconds, the
// core/v1 timestamps in seconds.
func TestAnEventsTimesKeepTheirPrecision(t *testing.T) {
	at := clockNow.Add(-1500 * time.Millisecond)
	micro := eventOf(corev1.Event{EventTime: metav1.NewMicroTime(at), Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(clockNow)}})
	secs := eventOf(corev1.Event{FirstTimestamp: metav1.NewTime(at.Truncate(time.Second)), LastTimestamp: metav1.NewTime(clockNow), Count: 2})
	if !micro.timeExact || !micro.lastExact || secs.timeExact || secs.lastExact {
		t.Fatalf("eventTime %v/%v, timestamps %v/%v: want exact for the first two only", micro.timeExact, micro.lastExact, secs.timeExact, secs.lastExact)
	}
}

// explain.md: "An Event series is told at its first time, whose note it keeps, with its count and its last time"; its
// times are the poster's clock's, a step of which "moves them by as much". A series whose last occurrence is stamped
// before its first (the poster's clock stepped back between them) keeps its last time; one of a single occurrence, or
// whose last is its first, has none.
func TestAnEventSeriesKeepsItsLastTimeWhateverItsOrder(t *testing.T) {
	first, earlier := metav1.NewMicroTime(clockNow.Add(-2*time.Minute)), metav1.NewMicroTime(clockNow.Add(-5*time.Minute))
	stepped := eventOf(corev1.Event{EventTime: first, Series: &corev1.EventSeries{Count: 3, LastObservedTime: earlier}})
	if !stepped.Last.Equal(earlier.Time.UTC()) || stepped.Count != 3 {
		t.Errorf("a series last seen before its first (a clock stepped back): last %v, count %d; want %v, 3", stepped.Last, stepped.Count, earlier.Time)
	}
	if one := eventOf(corev1.Event{EventTime: first, Series: &corev1.EventSeries{Count: 1, LastObservedTime: earlier}}); !one.Last.IsZero() {
		t.Errorf("one occurrence told a last time %v", one.Last)
	}
	// explain.md: "An Event series is told at its first time, ... with its count and its last time": a series of one
	// second (its last the same as its first) too.
	if same := eventOf(corev1.Event{EventTime: first, Series: &corev1.EventSeries{Count: 2, LastObservedTime: first}}); !same.Last.Equal(first.Time.UTC()) {
		t.Errorf("a series whose last is its first told no last time (%v)", same.Last)
	}
}

// explain.md: "a PU is in the answer until it is destroyed (its state `leaving` while its program's journal and
// dry-run report are told of its end ...)". A node agent in a dry run drops the PU of a pod that is gone while its
// journal, told before its report, commits the drop slowly: the PU is neither tracked nor in the report yet, and
// explain pod tells it leaving, never that podsweeper knows nothing of the pod. Once both have heard, the report
// tells the drop.
func TestAPUDroppedWhileItsJournalCommitsIsLeaving(t *testing.T) {
	committing, commit := make(chan struct{}), make(chan struct{})
	journal := deletion.ObserverFunc(func(ev deletion.Event) {
		if ev.Kind == deletion.EventWouldDestroy {
			close(committing)
			<-commit
		}
	})
	report := k8s.NewDryRunReport(0)
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	eng, err := deletion.New(getter, policy, deletion.Options{NodeName: "node-a", DryRun: true, Observer: deletion.Observers(journal, report)})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Track(ports.PU{PUID: firstUID, Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	swept := make(chan struct{})
	go func() { eng.Sweep(context.Background()); close(swept) }()
	<-committing
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(eng))
	mux.Handle(k8s.DryRunPath, report)
	api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"))
	api.handle("podsweeper/agent-a", mux)
	explain := func() string {
		t.Helper()
		x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "node-a", time.Now().UTC())
		if err != nil {
			t.Fatal(err)
		}
		return podText(t, x)
	}
	text := explain()
	wantNotSays(t, "explain pod", text, "knows nothing")
	wantSays(t, "explain pod", text, "PU "+firstUID+" of pod apps/web")
	wantSays(t, "explain pod", text, "no longer held: its tracking has ended")
	close(commit)
	<-swept
	text = explain()
	wantSays(t, "explain pod", text, "no longer held (its pod is gone for good)")
	wantNotSays(t, "explain pod", text, "its tracking has ended")
}
