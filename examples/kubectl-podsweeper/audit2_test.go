package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// anyPages serves a program's pages: status (nil: 503 as before the
// Inventory's list), dry run's report (nil: 404), address page.
type anyPages struct {
	at        time.Time // Podsweeper-Time; zero: none (an older program)
	status    any
	report    any
	address   any
	status503 bool
}

func (p *anyPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.at.IsZero() {
		w.Header().Set(k8s.TimeHeader, p.at.UTC().Format(time.RFC3339Nano))
	}
	var v any
	switch r.URL.Path {
	case k8s.StatusPath:
		if p.status503 {
			http.Error(w, "the deletion engine has not listed its Inventory yet: the PUs a restart left are not all known", http.StatusServiceUnavailable)
			return
		}
		v = p.status
		if v == nil {
			v = []k8s.PUStatus{}
		}
	case k8s.DryRunPath:
		v = p.report
	case addressPath:
		v = p.address
	}
	if v == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func TestAudit2HoldsSmoke(t *testing.T) {
	now := time.Now().UTC()
	checked := now.Add(-5 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "uid-web", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: now, status: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "idle", Age: "1m0s", LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}}})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	t.Log(out)
	if !strings.Contains(out, "5s ago: row 9") {
		t.Fatal("smoke failed")
	}
}

var (
	_ = corev1.PodRunning
	_ = metav1.Now
	_ types.UID
)

// staticMirror is a static pod's mirror pod: its API UID mirror, its
// kubelet's UID kubelet.
func staticMirror(ns, name, mirror, kubelet, node string) *corev1.Pod {
	p := workloadPod(ns, name, mirror, node)
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
	return p
}

// explain.md:12-13: "A static pod is one pod under its two UIDs (the
// kubelet's, and its mirror pod's in the API server): asked by either,
// with `--uid` alone too, the PUs under both are told."
// cni-gc holds the static pod's PU under the kubelet's UID (its PUs come
// from libcni's cache, K8S_POD_UID; explain.md:69-71: "as its PUs and
// libcni's cache know it"), and no PU is ever created under the mirror's
// UID (adapters/k8s/wiring.go:182-185). Asked by the mirror pod's UID
// alone, the plugin must tell that PU.
func TestAudit2StaticPodByMirrorUIDAlone(t *testing.T) {
	now := time.Now().UTC()
	checked := now.Add(-5 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"),
		staticMirror("kube-system", "etcd-node-a", "mirror-uid", "kubelet-uid", "node-a"))
	api.handle("kube-system/cni-gc-a", &anyPages{at: now, status: []k8s.PUStatus{{PUID: "kubelet-uid", Pod: "kube-system/etcd-node-a",
		State: "idle", Age: "1m0s", LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}}})
	c := api.cluster(5 * time.Second)

	// By the kubelet's UID alone: told (the control).
	x, err := c.explainPod(context.Background(), "", "", "kubelet-uid", "", now)
	if err != nil {
		t.Fatal(err)
	}
	byKubelet := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(byKubelet, "PU kubelet-uid of pod kube-system/etcd-node-a") {
		t.Fatalf("by the kubelet's UID, the PU is not told:\n%s", byKubelet)
	}
	// By the mirror pod's UID alone: the same pod, the same PU.
	x, err = c.explainPod(context.Background(), "", "", "mirror-uid", "", now)
	if err != nil {
		t.Fatal(err)
	}
	byMirror := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(byMirror, "PU kubelet-uid of pod kube-system/etcd-node-a") {
		t.Fatalf("asked by the static pod's mirror UID alone, its PU under the kubelet's UID is not told; the plugin says:\n%s", byMirror)
	}
}

// explain.md:296-297: "An address no one holds is said so, and the plugin
// exits 0, as for an unknown pod." cni-gc's address page answers in full
// that nothing holds it; its status page (the engine's PUs, which only
// tell the pods of attachments) answers 503, its engine just restarted.
func TestAudit2UnheldAddressWithFailingStatusPage(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-12 * time.Second)
	api := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"))
	api.handle("kube-system/cni-gc-a", &anyPages{at: now, status503: true,
		address: AddressStatus{IP: "10.88.0.200", ReservationsRead: &read}})
	c := api.cluster(5 * time.Second)
	x, err := c.explainIP(context.Background(), "10.88.0.200", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderIP(b, x) })
	if !strings.Contains(out, "No attachment of libcni's cache and no host-local reservation holds it") || strings.Contains(out, "cannot tell all that holds") {
		t.Fatalf("an address no one holds, cni-gc's address page complete, its status page 503: the plugin says:\n%s", out)
	}
}

func destroyEvent(ns, name, kind, objNS, objName, uid string, at time.Time, note string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject:      corev1.ObjectReference{Kind: kind, Namespace: objNS, Name: objName, UID: types.UID(uid)},
		Reason:              k8s.EventReasonDestroyed,
		Type:                corev1.EventTypeNormal,
		Message:             note,
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: "podsweeper",
		Count:               1,
	}
}

// explain.md:8-11: "a PU is in the answer until it is destroyed, and the
// destroy's Event after (the Events are read again once the programs
// answered, ...). An Event of an earlier pod of that name (another UID,
// ...) is marked so: `(of an earlier pod of that name, UID …)`"; and
// explain.md:182-183: "The pod of that name now is another ...: its PU is
// held as any live pod's; the earlier pod's PU, under the earlier UID,
// goes".
// The pod apps/web (UID old) is read; before its node agent is asked, the
// StatefulSet recreates it (UID new) and the node agent destroys old's PU
// (its Event) and tracks new's. The plugin then tells new's PU as "of an
// earlier pod of that name", and old's destroy Event as the pod's now.
func TestAudit2RecreatedBetweenReads(t *testing.T) {
	now := time.Now().UTC()
	checked := now.Add(-1 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "old-uid", "node-a"))
	gets := 0
	api.fake.PrependReactor("get", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.(k8stesting.GetAction).GetName() != "web" {
			return false, nil, nil
		}
		gets++
		if gets > 1 {
			return false, nil, nil
		}
		tr := api.fake.Tracker()
		gvr := corev1.SchemeGroupVersion.WithResource("pods")
		old, err := tr.Get(gvr, "apps", "web")
		if err != nil {
			return true, nil, err
		}
		// Meanwhile: recreated, and old's PU destroyed.
		_ = tr.Delete(gvr, "apps", "web")
		_ = tr.Add(workloadPod("apps", "web", "new-uid", "node-a"))
		_ = tr.Add(destroyEvent("apps", "web.1", "Pod", "apps", "web", "old-uid", now.Add(time.Second),
			"UIDChanged: destroyed PU old-uid of pod apps/web (no sandbox recorded)"))
		return true, old, nil
	})
	api.handle("podsweeper/agent-a", &anyPages{at: now, status: []k8s.PUStatus{{PUID: "new-uid", Pod: "apps/web",
		State: "idle", Age: "2s", LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}}})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if strings.Contains(out, "this PU is of an earlier pod of that name (UID new-uid)") {
		t.Errorf("the pod now's PU (new-uid) is told as of an earlier pod of that name:\n%s", out)
	}
	if !strings.Contains(out, "(of an earlier pod of that name, UID old-uid)") {
		t.Errorf("the destroy Event of the earlier pod (old-uid), read after it was recreated, is not marked as an earlier pod's:\n%s", out)
	}
}

// explain.md:66-67: "A dry run keeps its latest reports only: when none of
// the pod's is among them, the answer says it cannot tell, not that
// podsweeper knows nothing."
// The pod apps/db is gone; the cluster controller destroyed its PU (its
// Event); the node agent, in a dry run, reported its PU long ago and its
// report has since been pushed out of the kept ones (1500 made, 2 kept, of
// other pods). The answer must say it cannot tell what the dry run did.
func TestAudit2CutReportWithAnEvent(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"),
		podsweeperProgram("cluster-controller", "podsweeper", "cc-1", "node-b"),
		destroyEvent("apps", "db.1", "Pod", "apps", "db", "db-uid", now.Add(-30*time.Second),
			"PodGone: destroyed PU db-uid of pod apps/db (no sandbox recorded)"))
	others := []k8s.WouldDestroy{
		{At: now.Add(-5 * time.Second), PUID: "o1", Pod: "apps/o1", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true},
		{At: now.Add(-4 * time.Second), PUID: "o2", Pod: "apps/o2", Reason: "PodGone", Row: 1, Why: "pod not found", Dropped: true},
	}
	api.handle("podsweeper/agent-a", &anyPages{at: now, report: map[string]any{"total": 1500, "reports": others}})
	api.handle("podsweeper/cc-1", &anyPages{at: now})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "cannot tell") {
		t.Fatalf("none of the pod's reports among the dry run's kept ones (1500 made, 2 kept), and the answer does not say it cannot tell:\n%s", out)
	}
}

// explain.md:140-142 and its golden (explain-live.txt): "The controller's
// second replica, a standby, holds none." ... "cluster-controller
// podsweeper/podsweeper-cluster-controller-5d8f7-fghij holds no PU of this
// pod."; program/status.go:57-58: "It serves on every replica, leader or
// not, as the probes do: a standby's page says it holds no PU."
// The cluster controller's engine has an Inventory (its PU directory) and
// runs on the leader only (adapters/k8s: NeedLeaderElection): a standby's
// engine is never started, so its Inventory is never listed. Its real
// status page, on the real handler, then answers 503 for as long as it is
// a standby, and the plugin says it could not be asked.
func TestAudit2StandbyHoldsNoPU(t *testing.T) {
	now := time.Now().UTC()
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return nil, nil })
	getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound })
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	standby, err := deletion.New(getter, policy, deletion.Options{Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	api := newFakeCluster(t,
		podsweeperProgram("cluster-controller", "podsweeper", "cc-standby", "node-b"),
		workloadPod("apps", "web", "web-uid", "node-a"))
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(standby)) // not started: a standby's
	api.handle("podsweeper/cc-standby", mux)
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "cluster-controller podsweeper/cc-standby (a standby: its engine does not run) holds no PU of this pod.") {
		t.Fatalf("the cluster controller's standby (its engine not started, as on every standby) is not told as holding no PU:\n%s", out)
	}
}

// hourBehindClock is the real clock as an engine sees it once the node's
// wall clock was stepped an hour forward after the engine began (an NTP
// step after boot): the engine's times are its epoch plus the monotonic
// time since (deletion's timeOf), an hour behind the wall clock; its
// timers are the real ones.
type hourBehindClock struct{ clock.RealClock }

func (hourBehindClock) Now() time.Time                    { return time.Now().Add(-time.Hour) }
func (c hourBehindClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// adapters/k8s/status.go:37-42: "TimeHeader is the response header in
// which the status page ... tell when they read what they answer, on the
// program's clock ...: the times of the answer are told relative to it
// (kubectl podsweeper does), whatever the reader's clock"; explain.md:77-81:
// "A program's times ("2s ago", "next in 6s") are told from when the page
// they come from began to answer"; deletion/options.go:166: "Clock drives
// the periodic checks, the retries, the rate's turns and the times
// reported".
// The engine's times (LastChecked, NextAttempt) are on its Clock; the
// status page's Podsweeper-Time is time.Now(), another clock: a PU checked
// a moment ago is told as checked an hour ago.
func TestAudit2StatusTimesOnTheEnginesClock(t *testing.T) {
	getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		return workloadPod(key.Namespace, key.Name, "web-uid", "node-a"), nil
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	engine, err := deletion.New(getter, policy, deletion.Options{Clock: hourBehindClock{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := engine.Track(ports.PU{PUID: "web-uid", Pod: types.NamespacedName{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = engine.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		engine.TriggerAll()
		sts := engine.Status()
		if len(sts) == 1 && !sts[0].LastChecked.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PU was not checked: %+v", sts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "web-uid", "node-a"))
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(engine))
	api.handle("podsweeper/agent-a", mux)
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "last check    0s ago") && !strings.Contains(out, "last check    1s ago") && !strings.Contains(out, "last check    just now") {
		t.Fatalf("a PU checked within the last second is told:\n%s", out)
	}
}

// explain.md:77-81: a program's times are told from when its page began to
// answer (its Podsweeper-Time), or, from an older program without it,
// from when its answer came; not from when the command began.
func TestAudit2HoldsTimesFromThePage(t *testing.T) {
	now := time.Now().UTC()
	progNow := now.Add(-10 * time.Minute) // the program's clock, 10 minutes behind the reader's
	checked := progNow.Add(-5 * time.Second)
	next := progNow.Add(6 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "db", "db-uid", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: progNow, status: []k8s.PUStatus{{PUID: "db-uid", Pod: "apps/db", State: "waiting for a retry",
		Age: "3m", LastChecked: &checked, LastRow: 1, Why: "pod not found", Attempts: 3, NextAttempt: &next, LastError: "boom"}}})
	c := api.cluster(5 * time.Second)
	x, err := c.explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "last check    5s ago") || !strings.Contains(out, "next in 6s") {
		t.Fatalf("times not told from the page's own time:\n%s", out)
	}
	var js bytes.Buffer
	if err := RenderPodJSON(&js, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"at": "`+progNow.Format(time.RFC3339Nano)) {
		t.Fatalf("JSON's at is not the page's time:\n%s", js.String())
	}
}

// explain.md:8-10: a destroy after the programs answered is in the
// Events read again.
func TestAudit2HoldsDestroyAfterTheProgramsAnswered(t *testing.T) {
	now := time.Now().UTC()
	pages := &anyPages{at: now}
	api2 := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api2.handle("podsweeper/agent-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages.ServeHTTP(w, r)
		if r.URL.Path == k8s.StatusPath {
			e := destroyEvent("default", "node-a.1", "Node", "", "node-a", "node-a", now, "PodGone: destroyed PU db-uid of pod apps/db (no sandbox recorded)")
			e.Related = &corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "db", UID: "db-uid"}
			_ = api2.fake.Tracker().Add(e)
		}
	}))
	x, err := api2.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "regarding Node/node-a: PodGone: destroyed PU db-uid") {
		t.Fatalf("a destroy after the programs answered is not told:\n%s", out)
	}
}

// explain.md:64-66: a program whose engine has not listed its Inventory
// answers 503 and could not be asked; the answer says it cannot tell.
func TestAudit2HoldsNotListedCouldNotBeAsked(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: now, status503: true})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "could not be asked") || !strings.Contains(out, "podsweeper cannot tell all it knows of this pod") {
		t.Fatalf("a 503 page:\n%s", out)
	}
}

// explain.md:26-27, 72-74: --timeout bounds each program's question.
func TestAudit2HoldsSlowPageTimesOut(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	release := make(chan struct{})
	defer close(release)
	api.handle("podsweeper/agent-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = w.Write([]byte("["))
		w.(http.Flusher).Flush()
		<-release
	}))
	start := time.Now()
	x, err := api.cluster(time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("took %v with --timeout=1s", d)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "could not be asked") {
		t.Fatalf("a slow page:\n%s", out)
	}
}

// explain.md:74, 80-81: explain ip asks each cni-gc of the node in turn;
// the second's times are told from its own page, and the first, not asked,
// is named: what it freed is not told, and the answer cannot tell.
func TestAudit2HoldsSecondCNIGCTimes(t *testing.T) {
	now := time.Now().UTC()
	second := now.Add(-3 * time.Minute)
	read := second.Add(-12 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"),
		podsweeperProgram("cni-gc", "kube-system", "cni-gc-b", "node-a"))
	api.handle("kube-system/cni-gc-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	api.handle("kube-system/cni-gc-b", &anyPages{at: second, address: AddressStatus{IP: "10.88.0.9", ReservationsRead: &read}})
	x, err := api.cluster(5*time.Second).explainIP(context.Background(), "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderIP(b, x) })
	if !strings.Contains(out, "cni-gc-b") || !strings.Contains(out, "sweep 12s ago") || !strings.Contains(out, "Not asked: cni-gc kube-system/cni-gc-a") || !strings.Contains(out, "cannot tell all that holds this address") {
		t.Fatalf("second cni-gc:\n%s", out)
	}
}

// explain.md:10-11: an Event of an earlier pod of that name is marked so,
// in text and JSON.
func TestAudit2HoldsEarlierPodsEventMarked(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		workloadPod("apps", "web", "new-uid", "node-a"),
		destroyEvent("apps", "web.1", "Pod", "apps", "web", "old-uid", now.Add(-time.Minute), "UIDChanged: destroyed PU old-uid of pod apps/web (no sandbox recorded)"))
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	var js bytes.Buffer
	_ = RenderPodJSON(&js, x)
	if !strings.Contains(out, "(of an earlier pod of that name, UID old-uid)") || !strings.Contains(js.String(), `"earlierUID": "old-uid"`) {
		t.Fatalf("not marked:\n%s\n%s", out, js.String())
	}
}

// explain.md:120, 437-442: a port-forward the user may not create is one
// line that says which permission is missing.
func TestAudit2HoldsForbiddenPortForward(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.refuseAllForwards()
	_, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err == nil || !strings.Contains(err.Error(), "forbidden: you may not create pods/portforward in namespace podsweeper") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
}

// explain.md:280-297: several attachments of an address, each with its
// pod now and cni-gc's PU of it, and a never-touched entry with why.
func TestAudit2HoldsSeveralAttachments(t *testing.T) {
	now := time.Now().UTC()
	checked := now.Add(-8 * time.Second)
	api := newFakeCluster(t,
		podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"),
		workloadPod("apps", "web", "new-uid", "node-a"))
	api.handle("kube-system/cni-gc-a", &anyPages{at: now,
		status: []k8s.PUStatus{{PUID: "old-uid", Pod: "apps/web", State: "waiting for a retry", Age: "5m", LastChecked: &checked, LastRow: 4, Why: "pod recreated with another UID", Attempts: 2}},
		address: AddressStatus{IP: "10.88.0.7", Attachments: []AttachmentStatus{
			{Network: "podnet", ContainerID: "aaaaaaaaaaaaaaaaaaaa", IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: "old-uid", Written: now.Add(-5 * time.Minute)},
			{Network: "podnet", ContainerID: "bbbbbbbbbbbbbbbbbbbb", IfName: "eth0", File: "/var/lib/cni/cache/results/x", NeverTouched: "its file name is not libcni's", PodNamespace: "apps", PodName: "web", PodUID: "new-uid", Written: now.Add(-time.Minute)},
		}}})
	x, err := api.cluster(5*time.Second).explainIP(context.Background(), "10.88.0.7", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderIP(b, x) })
	for _, want := range []string{"gone: the pod of that name now is another (UID new-uid).", "last check  8s ago: row 4", "never: cni-gc does not use this entry: its file name is not libcni's", "live on node node-a: Running."} {
		if !strings.Contains(out, want) {
			t.Fatalf("want %q in:\n%s", want, out)
		}
	}
}

// explain.md:71-72: "An Event series is told at its first time, whose note
// it keeps, with its count and its last time."
func TestAudit2HoldsEventSeries(t *testing.T) {
	now := time.Now().UTC()
	first := now.Add(-5 * time.Minute)
	e := destroyEvent("apps", "db.1", "Pod", "apps", "db", "db-uid", first, "PodGone: destroyed PU db-uid of pod apps/db (no sandbox recorded)")
	e.Count = 0
	e.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), e)
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "5m0s ago  Normal PUDestroyed") || !strings.Contains(out, "(3 times, the last 1m0s ago; the note is the first's)") {
		t.Fatalf("series:\n%s", out)
	}
}

// explain.md:286-287: "The plugin adds the pod each attachment names as
// the API server has it now, and cni-gc's PU of it"; explain.md:294-296:
// a cache entry cni-gc never touches is "told with why".
// A cache entry that names its pod (K8S_POD_NAMESPACE, K8S_POD_NAME) but
// has no K8S_POD_UID is one cni-gc never touches (adapters/cni/cache.go:
// "no K8S_POD_UID, K8S_POD_NAMESPACE or K8S_POD_NAME in its CNI_ARGS").
// The plugin reads the pod it names (its JSON's pods: apps/web, live), yet
// its text says the entry is "of no pod", and tells no pod.
func TestAudit2NeverTouchedEntryNamingItsPod(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t,
		podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"),
		workloadPod("apps", "web", "web-uid", "node-a"))
	api.handle("kube-system/cni-gc-a", &anyPages{at: now,
		address: AddressStatus{IP: "10.88.0.7", Attachments: []AttachmentStatus{
			{Network: "podnet", ContainerID: "bbbbbbbbbbbbbbbbbbbb", IfName: "eth0", File: "podnet-bbbbbbbbbbbbbbbbbbbb-eth0",
				NeverTouched: "no K8S_POD_UID, K8S_POD_NAMESPACE or K8S_POD_NAME in its CNI_ARGS: not a pod's attachment, or of another runtime",
				PodNamespace: "apps", PodName: "web", Written: now.Add(-time.Minute)},
		}}})
	x, err := api.cluster(5*time.Second).explainIP(context.Background(), "10.88.0.7", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderIP(b, x) })
	var js bytes.Buffer
	_ = RenderIPJSON(&js, x)
	jsonTellsPod := strings.Contains(js.String(), `"name": "web"`)
	if jsonTellsPod && (strings.Contains(out, "of no pod") || !strings.Contains(out, "apps/web")) {
		t.Fatalf("the JSON tells the pod the entry names (apps/web, live); the text says:\n%s\nJSON:\n%s", out, js.String())
	}
}

// explain.md:53-54: "`--uid` alone names the pod from its Events, its PU
// or its dry run's report": a gone pod's dropped report names it.
func TestAudit2HoldsUIDAloneNamedByReport(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"),
		workloadPod("apps", "web", "new-uid", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: now, report: map[string]any{"total": 1, "reports": []k8s.WouldDestroy{
		{At: now.Add(-19 * time.Second), PUID: "old-uid", Pod: "apps/web", Reason: "UIDChanged", Row: 4, Why: "pod recreated with another UID", Dropped: true}}}})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "", "", "old-uid", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	for _, want := range []string{"Pod with UID old-uid (apps/web): no pod of that name has that UID", "now has UID new-uid", "no longer held (its pod is gone for good)", "(19s ago)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("want %q:\n%s", want, out)
		}
	}
}

// explain.md:12-13: a static pod asked by its kubelet UID alone, the
// cluster controller holding its PU under the mirror UID: both told.
func TestAudit2HoldsStaticPodByKubeletUIDWithController(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t,
		podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"),
		podsweeperProgram("cluster-controller", "podsweeper", "cc-1", "node-b"),
		staticMirror("kube-system", "etcd-node-a", "mirror-uid", "kubelet-uid", "node-a"))
	api.handle("podsweeper/agent-a", &anyPages{at: now, status: []k8s.PUStatus{{PUID: "kubelet-uid", Pod: "kube-system/etcd-node-a", State: "tracking", Age: "1m"}}})
	api.handle("podsweeper/cc-1", &anyPages{at: now, status: []k8s.PUStatus{{PUID: "mirror-uid", Pod: "kube-system/etcd-node-a", State: "tracking", Age: "1m"}}})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "", "", "kubelet-uid", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "PU kubelet-uid") || !strings.Contains(out, "PU mirror-uid") || strings.Contains(out, "earlier pod") {
		t.Fatalf("static pod:\n%s", out)
	}
}

// explain.md:440-442: "`create` is what `kubectl port-forward` needs, and
// enough: the plugin tries a WebSocket (verb `get`) first, then SPDY
// (`create`), whose answer decides."
func TestAudit2HoldsCreateIsEnough(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.wsForbidden = true
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "holds no PU of this pod") {
		t.Fatalf("WebSocket refused, SPDY allowed:\n%s", out)
	}
}

// explain.md:59-60: "When a program could not be asked, or none was
// found, the answer says that it cannot tell what podsweeper knows of the
// pod, rather than that it knows nothing".
// A live pod (or one with an Event), and no program found (the programs'
// namespace given wrong with -n, say): the answer never says it cannot
// tell, as it does when one could not be asked.
func TestAudit2NoProgramFoundForALivePod(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, workloadPod("apps", "web", "web-uid", "node-a"))
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "web", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "cannot tell") {
		t.Fatalf("no program found, and the answer does not say it cannot tell:\n%s", out)
	}
}

// explain.md:72-74: --timeout "bounds each program's question whole, the
// opening of the port-forward's streams included".
func TestAudit2HoldsStreamNeverAcknowledged(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.hang["podsweeper/agent-a"] = true
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	start := time.Now()
	x, err := api.cluster(time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("took %v with --timeout=1s", d)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "could not be asked") {
		t.Fatalf("stream never acknowledged:\n%s", out)
	}
}
