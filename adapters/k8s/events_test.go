package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// recorded is one Eventf call, as fakeRecorder saw it.
type recorded struct {
	regarding, related *corev1.ObjectReference
	typ, reason        string
	action, note       string
}

// fakeRecorder records every Eventf call.
type fakeRecorder struct {
	mu  sync.Mutex
	got []recorded
}

func (r *fakeRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	rec := recorded{typ: eventtype, reason: reason, action: action, note: fmt.Sprintf(note, args...)}
	rec.regarding, _ = regarding.(*corev1.ObjectReference)
	if related != nil {
		rec.related = related.(*corev1.ObjectReference)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rec)
}

func (r *fakeRecorder) calls() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.got...)
}

func podRef(ns, name, uid string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: types.UID(uid)}
}

func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID(name)}
}

// TestEventsRegardThePodOrTheNodeByReason protects which object each
// Event is about: the pod the PU was created for (by its PUID) while a pod
// of that name exists, the Node with the pod related when it is gone, and
// the gone pod itself for an engine without a node.
func TestEventsRegardThePodOrTheNodeByReason(t *testing.T) {
	pu := ports.PU{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "shop", Name: "web-0"}, SandboxID: "sb-1"}
	pod := podRef("shop", "web-0", "uid-1")
	for _, tc := range []struct {
		node               string
		reason             ports.Reason
		regarding, related *corev1.ObjectReference
	}{
		{"node-a", ports.ReasonSandboxChanged, pod, nil},
		{"node-a", ports.ReasonPodTerminated, pod, nil},
		{"node-a", ports.ReasonUIDChanged, pod, nil},
		{"node-a", ports.ReasonNodeChanged, pod, nil},
		{"node-a", ports.ReasonPodGone, nodeRef("node-a"), pod},
		{"", ports.ReasonPodGone, pod, nil}, // a cluster-wide engine
	} {
		t.Run(fmt.Sprintf("%s/node=%q", tc.reason, tc.node), func(t *testing.T) {
			rec := &fakeRecorder{}
			ev, err := k8s.NewEvents(rec, k8s.EventsOptions{NodeName: tc.node})
			require.NoError(t, err)
			ev.Observe(deletion.Event{Kind: deletion.EventDestroyed, PU: pu, Reason: tc.reason, DestroyCalls: 1})
			assert.Equal(t, []recorded{{
				regarding: tc.regarding, related: tc.related,
				typ: corev1.EventTypeNormal, reason: k8s.EventReasonDestroyed, action: k8s.EventActionDestroy,
				note: string(tc.reason) + ": destroyed PU uid-1 of pod shop/web-0 (sandbox sb-1)",
			}}, rec.calls())
		})
	}
}

// TestEventsWarnOfAnAbandonedPU protects the Warning of a PU the engine
// gave up on, with its calls and error (a '%' in it is not a verb), and
// the note's length within what the API server accepts, cut between
// characters.
func TestEventsWarnOfAnAbandonedPU(t *testing.T) {
	rec := &fakeRecorder{}
	ev, err := k8s.NewEvents(rec, k8s.EventsOptions{NodeName: "node-a"})
	require.NoError(t, err)
	pu := ports.PU{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "shop", Name: "web-0"}}
	ev.Observe(deletion.Event{Kind: deletion.EventAbandoned, PU: pu, Reason: ports.ReasonUIDChanged, DestroyCalls: 3,
		Err: ports.Permanent(errors.New("policy engine 100% busy"))})
	ev.Observe(deletion.Event{Kind: deletion.EventAbandoned, PU: pu, Reason: ports.ReasonPodGone, DestroyCalls: 1,
		Err: errors.New(strings.Repeat("x", 2000))})
	ev.Observe(deletion.Event{Kind: deletion.EventAbandoned, PU: pu, Reason: ports.ReasonPodGone, DestroyCalls: 1,
		Err: errors.New(strings.Repeat("é", 1000))})
	got := rec.calls()
	require.Len(t, got, 3)
	assert.Equal(t, recorded{
		regarding: podRef("shop", "web-0", "uid-1"),
		typ:       corev1.EventTypeWarning, reason: k8s.EventReasonAbandoned, action: k8s.EventActionDestroy,
		note: "UIDChanged: gave up destroying PU uid-1 of pod shop/web-0 (no sandbox recorded) after 3 calls; " +
			"the policy engine may still hold it: permanent: policy engine 100% busy",
	}, got[0])
	assert.Equal(t, nodeRef("node-a"), got[1].regarding)
	assert.Len(t, got[1].note, 1024, "cut to the API server's limit")
	assert.True(t, strings.HasSuffix(got[1].note, "..."))
	assert.LessOrEqual(t, len(got[2].note), 1024)
	assert.True(t, utf8.ValidString(got[2].note), "no character cut in two")
}

// TestEventsIgnoreWhatIsNotADestroy keeps the Events to destroys and
// abandoned PUs: a check, a track, a failed attempt or a dry run's "would
// destroy" records nothing.
func TestEventsIgnoreWhatIsNotADestroy(t *testing.T) {
	rec := &fakeRecorder{}
	ev, err := k8s.NewEvents(rec, k8s.EventsOptions{NodeName: "node-a"})
	require.NoError(t, err)
	for _, kind := range []deletion.EventKind{deletion.EventTracked, deletion.EventChecked, deletion.EventGetFailed,
		deletion.EventDestroyFailed, deletion.EventVetoed, deletion.EventAdopted, deletion.EventUntracked, deletion.EventRestored, deletion.EventWouldDestroy} {
		ev.Observe(deletion.Event{Kind: kind, Reason: ports.ReasonPodGone})
	}
	assert.Empty(t, rec.calls())
	var none *k8s.Events
	none.Observe(deletion.Event{Kind: deletion.EventDestroyed}) // a nil *Events records nothing

	_, err = k8s.NewEvents(nil, k8s.EventsOptions{})
	assert.ErrorIs(t, err, k8s.ErrInvalidSetup)
}

// failingDryRunner is a PolicyHandler whose DryRunDestroyPU answers err.
type failingDryRunner struct {
	deletiontest.Policy
	err error
}

func (d *failingDryRunner) DryRunDestroyPU(context.Context, ports.DestroyEvent) error { return d.err }

// TestADryRunRecordsNoEventEvenWhenItGivesUp holds Observe's "a dry run, which destroys nothing, records none" where
// the engine gives up on a PU: a dry run whose DryRunDestroyPU answers a permanent error abandons the PU (its Observer
// is told EventAbandoned, DryRun set), and no "gave up destroying ... the policy engine may still hold it" Warning is
// recorded for a destroy never tried.
func TestADryRunRecordsNoEventEvenWhenItGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := deletiontest.NewCluster()
		rec := &fakeRecorder{}
		evs, err := k8s.NewEvents(rec, k8s.EventsOptions{NodeName: "node-a"})
		require.NoError(t, err)
		var kinds deletiontest.Events
		pol := &failingDryRunner{err: ports.Permanent(errors.New("the policy engine would refuse it"))}
		e := deletiontest.NewEngine(t, c, pol, deletion.Options{NodeName: "node-a", DryRun: true, Observer: deletion.Observers(evs, &kinds)})
		key := types.NamespacedName{Namespace: "apps", Name: "web"}
		require.NoError(t, e.Track(c.CreatePod(key, "node-a", "sb-1")))
		c.DeletePod(key)
		e.Sweep(context.Background())
		synctest.Wait()
		abandoned := kinds.Of(deletion.EventAbandoned)
		require.Len(t, abandoned, 1, "the dry run gave up on the PU")
		assert.True(t, abandoned[0].DryRun, "its EventAbandoned says it was a dry run's")
		assert.Empty(t, rec.calls(), "a dry run recorded an Event")
		assert.Zero(t, pol.CallCount(), "a dry run called DestroyPU")
	})
}

// TestEventsDoNotBlockOnAnUnreachableAPIServer protects the engine's
// workers from the API server: with the manager's recorder writing to a
// server that accepts requests and never answers, thousands of Observe
// calls return at once, while the recorder's write hangs.
func TestEventsDoNotBlockOnAnUnreachableAPIServer(t *testing.T) {
	var requests atomic.Int64
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release) // before Close, which waits for the handlers

	mgr, err := manager.New(&rest.Config{Host: hung.URL}, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
		Logger:  afterTestLogger(),
	})
	require.NoError(t, err)
	ev, err := k8s.NewEvents(mgr.GetEventRecorder("podsweeper"), k8s.EventsOptions{NodeName: "node-a"})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(runCtx) }()
	defer func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop within 30s")
		}
	}()

	destroyed := func(i int) deletion.Event {
		return deletion.Event{Kind: deletion.EventDestroyed, Reason: ports.ReasonPodGone, DestroyCalls: 1, PU: ports.PU{
			PUID: fmt.Sprintf("uid-%d", i), Pod: types.NamespacedName{Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}}}
	}
	ev.Observe(destroyed(0))
	require.Eventually(t, func() bool { return requests.Load() > 0 }, 10*time.Second, 5*time.Millisecond,
		"the recorder never tried to write the Event")

	// More Events than the broadcaster's queue holds (1000), each on a pod
	// of its own so that none joins another's series.
	const n = 3000
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for i := 1; i <= n; i++ {
			ev.Observe(destroyed(i))
		}
		done <- time.Since(start)
	}()
	select {
	case took := <-done:
		t.Logf("%d Observe calls took %v with the API server hung (%d requests hanging)", n, took, requests.Load())
	case <-time.After(20 * time.Second):
		t.Fatalf("Observe blocked: %d calls did not return within 20s", n)
	}
}

// TestEventsOnTheAPIServer runs a node agent whose engine records Events,
// under an identity that may only read pods and create and patch
// events.k8s.io Events (the node agent's RBAC), and reads them back from
// the API server: one for each reason, regarding the right object (kind,
// name, namespace, UID), with its type, reason, action and note.
func TestEventsOnTheAPIServer(t *testing.T) {
	needEnv(t)
	ctx := t.Context()
	user := "podsweeper-events-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	grant(t, user, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	})
	var sandboxes sync.Map // pod name → sandbox
	n := startNode(t, "events", nodeOptions{
		events:     true,
		restConfig: func(c *rest.Config) { c.Impersonate = rest.ImpersonationConfig{UserName: user} },
		unscoped:   true, // the cache sees the pod on another node: NodeChanged
		terminated: true, // PodTerminated
		extractor: ports.SandboxExtractorFunc(func(_ context.Context, pod *corev1.Pod) (string, error) {
			if sb, ok := sandboxes.Load(pod.Name); ok {
				return sb.(string), nil
			}
			return "sb-" + pod.Name, nil
		}),
		fail: func(ev ports.DestroyEvent) error {
			if ev.Pod.Name == "stuck" {
				return ports.Permanent(errors.New("policy engine 100% busy"))
			}
			return nil
		},
	})
	adopted := func(p *corev1.Pod) {
		t.Helper()
		require.Eventually(t, func() bool { e, ok := n.entry(p.UID); return ok && e.SandboxID != "" }, 10*time.Second,
			5*time.Millisecond, "pod %s's sandbox never recorded", p.Name)
	}
	key := func(p *corev1.Pod) types.NamespacedName { return types.NamespacedName{Namespace: n.ns, Name: p.Name} }

	gone, stuck := n.createPod("gone", n.name, nil), n.createPod("stuck", n.name, nil)
	sandboxed, finished := n.createPod("sandboxed", n.name, nil), n.createPod("finished", n.name, nil)
	moved := n.createPod("moved", "node-elsewhere", nil)
	replaced := n.createPod("replaced", n.name, nil)
	for _, p := range []*corev1.Pod{gone, stuck, sandboxed, finished, replaced} {
		adopted(p)
	}
	// PodGone, and PodGone abandoned.
	n.deletePod(gone)
	n.deletePod(stuck)
	// SandboxChanged: the runtime reports a new sandbox, the pod's next event triggers the check.
	sandboxes.Store("sandboxed", "sb-sandboxed-2")
	sandboxed.Annotations = map[string]string{"touched": "yes"}
	require.NoError(t, suite.client.Update(ctx, sandboxed))
	// PodTerminated.
	finished.Status.Phase = corev1.PodSucceeded
	require.NoError(t, suite.client.Status().Update(ctx, finished))
	// NodeChanged: a PU tracked for the pod of that name, which is bound elsewhere.
	require.NoError(t, n.engine.Track(ports.PU{PUID: string(moved.UID), Pod: key(moved)}))
	n.engine.TriggerPod(key(moved))
	// UIDChanged: a PU of an earlier pod of that name.
	const oldUID = "0ld00000-0000-4000-8000-000000000000"
	require.NoError(t, n.engine.Track(ports.PU{PUID: oldUID, Pod: key(replaced), SandboxID: "sb-old"}))
	n.engine.TriggerPod(key(replaced))

	pod := func(p *corev1.Pod, uid types.UID) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: n.ns, Name: p.Name, UID: uid}
	}
	node := corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.name, UID: types.UID(n.name)}
	want := []eventSeen{
		{Regarding: node, Related: ptr.To(pod(gone, gone.UID)), Type: "Normal", Reason: k8s.EventReasonDestroyed,
			Note: fmt.Sprintf("PodGone: destroyed PU %s of pod %s/gone (sandbox sb-gone)", gone.UID, n.ns)},
		{Regarding: node, Related: ptr.To(pod(stuck, stuck.UID)), Type: "Warning", Reason: k8s.EventReasonAbandoned,
			Note: fmt.Sprintf("PodGone: gave up destroying PU %s of pod %s/stuck (sandbox sb-stuck) after 1 call; "+
				"the policy engine may still hold it: permanent: policy engine 100%% busy", stuck.UID, n.ns)},
		{Regarding: pod(sandboxed, sandboxed.UID), Type: "Normal", Reason: k8s.EventReasonDestroyed,
			Note: fmt.Sprintf("SandboxChanged: destroyed PU %s of pod %s/sandboxed (sandbox sb-sandboxed)", sandboxed.UID, n.ns)},
		{Regarding: pod(finished, finished.UID), Type: "Normal", Reason: k8s.EventReasonDestroyed,
			Note: fmt.Sprintf("PodTerminated: destroyed PU %s of pod %s/finished (sandbox sb-finished)", finished.UID, n.ns)},
		{Regarding: pod(moved, moved.UID), Type: "Normal", Reason: k8s.EventReasonDestroyed,
			Note: fmt.Sprintf("NodeChanged: destroyed PU %s of pod %s/moved (no sandbox recorded)", moved.UID, n.ns)},
		{Regarding: pod(replaced, oldUID), Type: "Normal", Reason: k8s.EventReasonDestroyed,
			Note: fmt.Sprintf("UIDChanged: destroyed PU %s of pod %s/replaced (sandbox sb-old)", oldUID, n.ns)},
	}
	var got []eventSeen
	require.Eventually(t, func() bool {
		got = n.eventsSeen()
		return len(got) >= len(want)
	}, 30*time.Second, 50*time.Millisecond, "Events never written: %v", got)
	assert.ElementsMatch(t, want, got)
}

// eventSeen is what a test checks of an events.k8s.io Event podsweeper wrote.
type eventSeen struct {
	Regarding corev1.ObjectReference
	Related   *corev1.ObjectReference
	Type      string
	Reason    string
	Note      string
}

// eventsSeen lists the Events podsweeper wrote about n's pods (in its
// namespace) and its Node (in "default"), and checks what every one of
// them has in common.
func (n *node) eventsSeen() []eventSeen {
	n.t.Helper()
	var out []eventSeen
	for _, ns := range []string{n.ns, metav1.NamespaceDefault} {
		var list eventsv1.EventList
		require.NoError(n.t, suite.client.List(n.t.Context(), &list, client.InNamespace(ns)))
		for _, e := range list.Items {
			if e.ReportingController != "podsweeper" || (ns == metav1.NamespaceDefault && e.Regarding.Name != n.name) {
				continue
			}
			assert.Equal(n.t, k8s.EventActionDestroy, e.Action)
			assert.Nil(n.t, e.Series, "Event %s is a series", e.Name)
			out = append(out, eventSeen{Regarding: e.Regarding, Related: e.Related, Type: e.Type, Reason: e.Reason, Note: e.Note})
		}
	}
	return out
}

// grant lets user do what rules say, cluster-wide, until t ends.
func grant(t *testing.T, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	require.NoError(t, suite.client.Create(t.Context(), role))
	require.NoError(t, suite.client.Create(t.Context(), binding))
	t.Cleanup(func() {
		assert.NoError(t, suite.client.Delete(context.Background(), binding))
		assert.NoError(t, suite.client.Delete(context.Background(), role))
	})
}

// TestEventsOfADrainCostOnePOSTPerDestroy deletes 200 pods of a node at
// once and counts what the Events of their destroys cost the API server:
// one Event, written by one POST, per destroy, and no PATCH (no Event
// repeats another, so none becomes a series). It runs the manager's client
// with the node agent's rate limit (--kube-api-qps 50, --kube-api-burst
// 100) and with controller-runtime's default (none), and logs the numbers
// BENCHMARKS.md gives.
func TestEventsOfADrainCostOnePOSTPerDestroy(t *testing.T) {
	const pods = 200
	for _, tc := range []struct {
		name      string
		qps       float32
		burst     int
		limitedTo string
	}{
		{"node-agent-limit", 50, 100, "50/s, burst 100"},
		{"no-client-limit", -1, 0, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needEnv(t)
			count := &requestCounter{}
			n := startNode(t, "drain", nodeOptions{
				events:  true,
				confirm: true, // as the node agent: each destroy is confirmed by a read of the API server
				restConfig: func(c *rest.Config) {
					c.QPS, c.Burst = tc.qps, tc.burst
					c.Wrap(count.wrap)
				},
			})
			for i := range pods {
				n.createPod(fmt.Sprintf("p-%03d", i), n.name, nil)
			}
			require.Eventually(t, func() bool { return n.engine.Len() == pods }, 30*time.Second, 10*time.Millisecond,
				"the pods were never all tracked")

			before := count.snapshot()
			start := time.Now()
			require.NoError(t, suite.client.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(n.ns),
				client.GracePeriodSeconds(0)))
			require.Eventually(t, func() bool { return len(n.policy.events()) == pods }, 60*time.Second, 10*time.Millisecond,
				"the PUs were never all destroyed")
			destroyed := time.Since(start)
			var seen []eventSeen
			require.Eventually(t, func() bool { seen = n.eventsSeen(); return len(seen) >= pods }, 60*time.Second,
				50*time.Millisecond, "the Events were never all written")
			written := time.Since(start)
			got := count.snapshot().minus(before)

			assert.Len(t, seen, pods, "one Event per destroy")
			assert.Equal(t, pods, got.eventPOSTs, "one POST per Event")
			assert.Zero(t, got.eventOthers, "no PATCH or other write of an Event")
			t.Logf("client limit %s: %d destroys in %v, their %d Events written within %v: %.2f Events and %.2f events.k8s.io "+
				"requests per destroy (%d POST, %d other), at most %d in flight at once; the manager's other requests meanwhile: %d",
				tc.limitedTo, pods, destroyed.Round(time.Millisecond), len(seen), written.Round(time.Millisecond),
				float64(len(seen))/pods, float64(got.eventPOSTs+got.eventOthers)/pods, got.eventPOSTs, got.eventOthers,
				got.maxInFlight, got.others)
		})
	}
}

// requestCounter counts the requests of a rest.Config's client: those to
// events.k8s.io by method, and the others.
type requestCounter struct {
	mu       sync.Mutex
	counts   requestCounts
	inFlight int
}

type requestCounts struct {
	eventPOSTs, eventOthers, others int
	maxInFlight                     int // events.k8s.io requests at once, since the counter started
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		isEvent := strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/")
		c.mu.Lock()
		switch {
		case isEvent && req.Method == http.MethodPost:
			c.counts.eventPOSTs++
		case isEvent:
			c.counts.eventOthers++
		default:
			c.counts.others++
		}
		if isEvent {
			c.inFlight++
			c.counts.maxInFlight = max(c.counts.maxInFlight, c.inFlight)
		}
		c.mu.Unlock()
		resp, err := rt.RoundTrip(req)
		if isEvent {
			c.mu.Lock()
			c.inFlight--
			c.mu.Unlock()
		}
		return resp, err
	})
}

func (c *requestCounter) snapshot() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

// minus returns the requests made since before was taken.
func (r requestCounts) minus(before requestCounts) requestCounts {
	return requestCounts{
		eventPOSTs:  r.eventPOSTs - before.eventPOSTs,
		eventOthers: r.eventOthers - before.eventOthers,
		others:      r.others - before.others,
		maxInFlight: r.maxInFlight,
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
