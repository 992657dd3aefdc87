package main

// explain ip: an address asked on a node, each cni-gc of the node asked in turn, and what the answer says of it.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:296-297: "An address no one holds is said so, and the plugin
// exits 0, as for an unknown pod." cni-gc's address page answers in full
// that nothing holds it; its status page (the engine's PUs, which only
// tell the pods of attachments) answers 503, its engine just restarted.
func TestIPUnheldAddressWithFailingStatusPage(t *testing.T) {
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

// explain.md:74, 80-81: explain ip asks each cni-gc of the node in turn;
// the second's times are told from its own page, and the first, not asked,
// is named: what it freed is not told, and the answer cannot tell.
func TestIPSecondCNIGCTimes(t *testing.T) {
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

// explain.md:280-297: several attachments of an address, each with its
// pod now and cni-gc's PU of it, and a never-touched entry with why.
func TestIPSeveralAttachmentsEachTold(t *testing.T) {
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

// explain.md:286-287: "The plugin adds the pod each attachment names as
// the API server has it now, and cni-gc's PU of it"; explain.md:294-296:
// a cache entry cni-gc never touches is "told with why".
// A cache entry that names its pod (K8S_POD_NAMESPACE, K8S_POD_NAME) but
// has no K8S_POD_UID is one cni-gc never touches (adapters/cni/cache.go:
// "no K8S_POD_UID, K8S_POD_NAMESPACE or K8S_POD_NAME in its CNI_ARGS").
// The plugin reads the pod it names (its JSON's pods: apps/web, live), yet
// its text says the entry is "of no pod", and tells no pod.
func TestIPNeverTouchedEntryNamingItsPod(t *testing.T) {
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

// explain.md:77-78 "`explain ip` asks each cni-gc of the node in turn until
// one answers for that address" and 80-84: its times from its own pages'
// clocks, `at` for the address page and `pusAt` for the status page.
func TestExplainIPSecondCNIGCAndItsClock(t *testing.T) {
	skew := askedAt.Add(-2 * time.Hour)
	written := skew.Add(-4 * time.Minute)
	gc := &programPages{at: skew, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")},
		addresses: map[string]*AddressStatus{"10.88.0.4": {IP: "10.88.0.4", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: firstUID, Written: written}}}}}
	lc := skew.Add(-5 * time.Second)
	gc.pus[0].LastChecked = &lc
	api := newFakeCluster(t,
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a1", "node-a", "--status-bind-address=0"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a2", "node-a"),
		workloadPod("apps", "web", firstUID, "node-a")).streamingAnswers()
	api.handle("kube-system/cni-gc-a2", gc)
	x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.4", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	if !strings.Contains(out, "cni-gc kube-system/cni-gc-a2 (node node-a):") || !strings.Contains(out, "added 4m0s ago") ||
		!strings.Contains(out, "last check  5s ago") || !strings.Contains(out, "pod         live on node node-a: Running.") {
		t.Fatalf("%s", out)
	}
}

// explain.md:299-301: cni-gc's status page cannot be read: the address's
// answer stands, and a line says its PUs are not told.
func TestExplainIPStatusPage503(t *testing.T) {
	gc := &programPages{at: askedAt, status: 503, body: "the deletion engine has not listed its Inventory yet",
		addresses: map[string]*AddressStatus{"10.88.0.4": {IP: "10.88.0.4", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: firstUID, Written: askedAt.Add(-time.Minute)}}}}}
	api := newFakeCluster(t, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", firstUID, "node-a")).streamingAnswers()
	api.handle("kube-system/cni-gc-a", gc)
	x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.4", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	if x.PUsError == "" || !strings.Contains(out, "its PUs are not told") || !strings.Contains(out, "attachment    network podnet") {
		t.Fatalf("%s", out)
	}
}

// explain.md:296-299: a cache entry or a reservation file that holds the
// address and that cni-gc never touches is told with why; and its frees.
func TestExplainIPNeverTouchedAndFreed(t *testing.T) {
	read := askedAt.Add(-12 * time.Second)
	gc := &programPages{at: askedAt, addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9",
		Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "c0ffee", IfName: "eth0", Written: askedAt.Add(-time.Hour),
			File: "/var/lib/cni/results/podnet-c0ffee-eth0", NeverTouched: "it is of no pod (no K8S_POD_NAME in its CNI_ARGS)"}},
		Reservations: []ReservationStatus{{Network: "podnet", File: "/var/lib/cni/networks/podnet/10.88.0.9", ContainerID: "beef", IfName: "eth0",
			Reserved: askedAt.Add(-time.Hour), State: "never touched", Decision: FreeDecision{At: read, Row: -1, Why: "its network's directory is a link", Verdict: "keep"}}},
		ReservationsRead: &read,
		Freed: []FreedAddress{{At: askedAt.Add(-42 * time.Second), Network: "podnet", ContainerID: "dead", IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: firstUID,
			Decision: FreeDecision{At: askedAt.Add(-42 * time.Second), Reason: "PodGone", Row: 3, Why: "w", Verdict: "free"}}}}}}
	api := newFakeCluster(t, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", secondUID, "node-a")).streamingAnswers()
	api.handle("kube-system/cni-gc-a", gc)
	x, err := api.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	for _, want := range []string{"freeing     never: cni-gc does not use this entry: it is of no pod (no K8S_POD_NAME in its CNI_ARGS).",
		"never touched, as the sweep 12s ago decided by no row of the freeing table: its network's directory is a link.",
		"freed         42s ago: the attachment of pod apps/web", "gone: the pod of that name now is another (UID " + secondUID + ")."} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// explain.md:73-75 and 290-291: an attachment of a static pod (the
// kubelet's UID in libcni's cache) is told live, with cni-gc's PU of it.
func TestIPStaticPodAttachment(t *testing.T) {
	c := newFakeCluster(t, etcdMirror(), runningProgram("podsweeper-cni-gc", "kube-system", "cni-a", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("kube-system/cni-a", &addressPages{programPages: programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "KUBELET", Pod: "kube-system/etcd-node-a", State: "idle", Age: "1h"}}},
		addr: AddressStatus{IP: "10.88.0.6", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "sb1", IfName: "eth0",
			PodNamespace: "kube-system", PodName: "etcd-node-a", PodUID: "KUBELET", Written: askedAt.Add(-time.Hour)}}}})
	x, err := c.inNamespace("").explainIP(testContext(t), "10.88.0.6", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	s := ipText(t, x)
	if !strings.Contains(s, "pod         live on node node-a") || !strings.Contains(s, "PU          tracked 1h") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:300-302 and 78: a first cni-gc of the node that could not be
// asked gives way to the second; the second's status page answering 503,
// its address page's answer stands and a line says its PUs are not told.
func TestIPSecondCNIGCWithStatus503(t *testing.T) {
	c := newFakeCluster(t, workloadPod("apps", "web", "U1", "node-a"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-a1", "node-a", "--status-bind-address=0"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-a2", "node-a")).closingAnswers().listingEventsWhole()
	c.handle("kube-system/cni-a2", &addressPages{programPages: programPages{at: askedAt, status: 503, body: "not yet\n"},
		addr: AddressStatus{IP: "10.88.0.4", Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "sb1", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: "U1", Written: askedAt.Add(-time.Minute)}}}})
	x, err := c.inNamespace("").explainIP(testContext(t), "10.88.0.4", "node-a", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	s := ipText(t, x)
	if !strings.Contains(s, "cni-gc kube-system/cni-a2 (node node-a):") || !strings.Contains(s, "its PUs are not told") ||
		!strings.Contains(s, "added 1m0s ago") || !strings.Contains(s, "live on node node-a") {
		t.Fatalf("got:\n%s", s)
	}
}

// explain.md:90-93: a Pending cni-gc of the node beside one that answered is named on a line `Not asked:`, and an
// address nothing holds is then not "known nothing of".
func TestIPPendingBesideAnAnswer(t *testing.T) {
	prog := servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{
		addressPath:    {code: http.StatusOK, body: `{"ip":"10.88.0.200","reservationsRead":"2026-12-06T11:59:48Z"}`},
		k8s.StatusPath: {code: http.StatusOK, body: `[]`},
	})
	c := clusterServing(t, map[string]http.Handler{"kube-system/cg-a": prog},
		programPod("podsweeper-cni-gc", "cg", "kube-system", "cg-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "cg2", "kube-system", "cg2-a", "node-a", corev1.PodPending),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.200", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := ipTextAndJSON(t, x)
	if !strings.Contains(txt, "Not asked: cni-gc kube-system/cg2-a") || strings.Contains(txt, "knows nothing") {
		t.Errorf("text:\n%s", txt)
	}
}

// explain.md:90-92: "`explain ip` asks each cni-gc of the node in turn until one answers for that address; each
// holds its own latest frees, so one asked before it that could not be asked, and one of the node that does not run
// (Pending, Unknown), is named on a line `Not asked:` (`unasked` in JSON)". And explain.md:35: `-o json` prints what the
// text is made from, so every line of text says what the JSON says. A node whose Running cni-gc could not be asked (its listener off) and whose other cni-gc
// (a second release, or a rollout's surge) is Pending: the JSON names the Pending one in `unasked`; the text does not.
func TestIPPendingCNIGCNamedInTextAsInJSON(t *testing.T) {
	c := clusterServing(t, nil,
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning, "--status-bind-address=0"),
		programPod("podsweeper-cni-gc", "cni-gc2", "kube-system", "cni-gc2-b", "node-a", corev1.PodPending),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	var j struct {
		Unasked []string `json:"unasked"`
	}
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatal(err)
	}
	inJSON := false
	for _, u := range j.Unasked {
		inJSON = inJSON || strings.Contains(u, "cni-gc2-b")
	}
	inText := strings.Contains(txt, "Not asked:") && strings.Contains(txt, "cni-gc2-b")
	if inJSON != inText || !inText {
		t.Errorf("the Pending cni-gc kube-system/cni-gc2-b of node-a: in JSON's unasked %v, on a text line `Not asked:` %v\ntext:\n%s\njson:\n%s", inJSON, inText, txt, js)
	}
}

// explain.md:314-316: "When cni-gc's status page cannot be read, its address page's answer stands and the plugin
// says on a line that its PUs are not told, and why (`pusError` in JSON)." cni-gc answers its address page (nothing
// holds the address, its sweep read host-local's reservations) and its status page answers 500: the JSON says
// pusError; the text says no line of it, and ends "cni-gc knows nothing of this address."
func TestIPPUsErrorToldInText(t *testing.T) {
	at := clockNow
	prog := servePages(at, "", map[string]rawAnswer{
		addressPath:         {code: http.StatusOK, body: `{"ip":"10.88.0.200","reservationsRead":"2026-12-06T11:59:48Z"}`},
		"/debug/podsweeper": {code: http.StatusInternalServerError, body: "engine exploded"},
	})
	c := clusterServing(t, map[string]http.Handler{"kube-system/cni-gc-a": prog},
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.200", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	if x.PUsError == "" {
		t.Fatalf("no pusError: the status page answered 500\n%s", js)
	}
	if !strings.Contains(txt, "PUs are not told") {
		t.Errorf("JSON says pusError %q; the text says nothing of it:\n%s", x.PUsError, txt)
	}
}

// explain.md:90-92, the same promise: two Running cni-gc of the node, neither of which can be asked (both listeners
// off): the first's error says why it could not be asked, and the second is named on a line `Not asked:`, in the
// text as in JSON, never dropped.
func TestExplainIPNamesASecondCNIGCThatCouldNotBeAsked(t *testing.T) {
	c := clusterServing(t, nil,
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning, "--status-bind-address=0"),
		programPod("podsweeper-cni-gc", "cni-gc2", "kube-system", "cni-gc2-b", "node-a", corev1.PodRunning, "--status-bind-address=0"),
	)
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := ipTextAndJSON(t, x)
	if !slices.ContainsFunc(x.Unasked, func(u string) bool { return strings.Contains(u, "cni-gc2-b") }) ||
		!strings.Contains(txt, "Not asked: cni-gc kube-system/cni-gc2-b") {
		t.Errorf("the second cni-gc, which could not be asked either, is not named: unasked %q\ntext:\n%s", x.Unasked, txt)
	}
}

// explain.md:95-99: explain ip's times are told from when each page began to answer, on cni-gc's clock (at, pusAt).
func TestIPTimesOnCNIGCsClock(t *testing.T) {
	skew := clockNow.Add(-time.Hour) // cni-gc's clock, an hour behind
	read := skew.Add(-12 * time.Second).Format(time.RFC3339)
	c := clusterServing(t, map[string]http.Handler{
		"kube-system/cni-gc-a": servePages(skew, "", map[string]rawAnswer{
			addressPath:    {code: 200, body: `{"ip":"10.88.0.9","reservationsRead":"` + read + `","reservations":[{"network":"podnet","dataDir":"/var/lib/cni/networks","file":"/var/lib/cni/networks/podnet/10.88.0.9","containerID":"abc","ifName":"eth0","reserved":"` + read + `","decision":{"at":"` + read + `","row":14,"why":"w","verdict":"keep"},"state":"kept"}]}`},
			k8s.StatusPath: {code: 200, body: "[]"},
		}),
	}, programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.9", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	wantSays(t, "the text", txt, "reserved 12s ago")
	wantSays(t, "the text", txt, "as the sweep 12s ago decided")
	wantSays(t, "the JSON", js, `"at": "`+skew.Format(time.RFC3339)+`"`)
}

// docs/operating/explain.md:90-92: "`explain ip` asks each cni-gc of the node in turn ...; each holds its own latest
// frees, so one asked before it that could not be asked, and one of the node that does not run (Pending, Unknown), is
// named on a line `Not asked:` (`unasked` in JSON)". The node's only cni-gc is Unknown (its node's kubelet stopped
// reporting: it may well run, and hold its frees of the node): it is named nowhere, and the answer says that no
// cni-gc runs there ("no one was asked"), with no `unasked` in JSON. (explain.md:445-446 says that message is for "no
// Running pod of cni-gc's chart ... on that node": it contradicts :92, which this test holds the plugin to.)
func TestIPUnknownCNIGCNamed(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{},
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-unknown", "node-a", corev1.PodUnknown),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-b", "node-b", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	wantSays(t, "the text", txt, "Not asked: cni-gc kube-system/cni-gc-unknown")
	wantSays(t, "the JSON", js, `"unasked"`)
}

// docs/operating/explain.md:70-71 with :90-92: "When a program could not be asked, or none was found, the answer says
// that it cannot tell ..., rather than that it knows nothing"; "`explain ip` asks each cni-gc of the node in turn until
// one answers for that address; each holds its own latest frees". Two cni-gc run on node-a (a rollout's surge: the
// new pod and the old one, which freed 10.88.0.13 30s ago). The first by name answers that nothing holds the address
// and it freed none of it; the second, which did, is never asked, is named nowhere, and the answer says that cni-gc
// knows nothing of the address.
func TestIPSecondCNIGCNeverAsked(t *testing.T) {
	read := clockNow.Add(-12 * time.Second).Format(time.RFC3339)
	freedAt := clockNow.Add(-30 * time.Second).Format(time.RFC3339)
	c := clusterServing(t, map[string]http.Handler{
		"kube-system/cni-gc-a-new": cniGCAnsweringAt(t, `{"ip":"10.88.0.13","reservationsRead":"`+read+`"}`),
		"kube-system/cni-gc-b-old": cniGCAnsweringAt(t, `{"ip":"10.88.0.13","reservationsRead":"`+read+`","freed":[{"at":"`+freedAt+
			`","reservation":true,"network":"podnet","file":"/var/lib/cni/networks/podnet/10.88.0.13","containerID":"c0ffee00d2b34c4e9a513f0c8e5b7d2168a1b2c3d4e5f60718293a4b5c6d7e8f","ifName":"eth0",`+
			`"decision":{"at":"`+freedAt+`","reason":"NoSandbox","row":18,"why":"a host-local reservation of no sandbox the runtime lists or the cache holds, older than ReservationGrace","verdict":"free"}}]}`),
	},
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a-new", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-b-old", "node-a", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.13", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := ipTextAndJSON(t, x)
	wantNotSays(t, "the text", txt, "cni-gc knows nothing of this address")
	if !strings.Contains(txt, "cni-gc-b-old") {
		t.Errorf("the text names nowhere the cni-gc that freed the address, which was not asked:\n%s", txt)
	}
}

// go doc k8s.EngineHeader: EngineNotRunning for an engine not started; "kubectl podsweeper tells such a page's program
// from one that holds nothing". cni-gc's address page names a live pod's attachment; its status page says its engine
// has not started and lists no PU: explain ip's text and JSON say so, rather than reading as an engine that runs and
// holds no PU of the pod.
func TestIPEngineNotRunningToldApart(t *testing.T) {
	written := clockNow.Add(-4 * time.Minute).Format(time.RFC3339)
	read := clockNow.Add(-12 * time.Second).Format(time.RFC3339)
	c := clusterServing(t, map[string]http.Handler{
		"kube-system/cni-gc-a": servePages(clockNow, k8s.EngineNotRunning, map[string]rawAnswer{
			addressPath:    {code: 200, body: `{"ip":"10.88.0.4","reservationsRead":"` + read + `","attachments":[{"network":"podnet","containerID":"3a9f0c1b2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8","ifName":"eth0","podNamespace":"apps","podName":"web","podUID":"` + firstUID + `","written":"` + written + `"}]}`},
			k8s.StatusPath: {code: 200, body: "[]"},
		}),
	},
		workloadPod("apps", "web", firstUID, "node-a"),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	x, err := c.explainIP(testContext(t), "10.88.0.4", "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := ipTextAndJSON(t, x)
	if !strings.Contains(txt, "its engine has not started") {
		t.Errorf("the text does not tell cni-gc's engine, which does not run, from one that holds nothing:\n%s", txt)
	}
	if !strings.Contains(js, "standby") && !strings.Contains(js, "engine") {
		t.Errorf("the JSON does not tell cni-gc's engine, which does not run, from one that holds nothing:\n%s", js)
	}
}

// docs/operating/explain.md:79: "`explain ip` asks each cni-gc of the node in turn until one answers for that
// address"; the one that could not be asked is named, and the answer cannot tell all that holds the address, exit 0.
func TestExplainIPAsksEachCNIGCInTurn(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	c.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-2", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case addressPath:
			_, _ = io.WriteString(w, `{"ip":"`+r.URL.Query().Get("ip")+`"}`)
		case k8s.StatusPath:
			_, _ = io.WriteString(w, `[]`)
		default:
			http.NotFound(w, r)
		}
	}))
	code, out, errOut := c.run("explain", "ip", "10.88.0.200", "--node", "node-a").codeOutErr()
	if code != 0 || !strings.Contains(out, "cni-gc kube-system/cni-gc-2 (node node-a):") || !strings.Contains(out, "Not asked: cni-gc kube-system/cni-gc-1") || !strings.Contains(out, "cni-gc cannot tell all that holds this address") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// One cni-gc, whose sweep read the reservations, and
// nothing holds the address: "knows nothing".
func TestExplainIPUnknownAddress(t *testing.T) {
	at := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-bbbb": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","reservationsRead":"` + at.Add(-12*time.Second).Format(time.RFC3339Nano) + `"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 5*time.Second, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", at)
	if err != nil {
		t.Fatal(err)
	}
	text := ipText(t, x)
	if !strings.Contains(text, "cni-gc knows nothing of this address.") {
		t.Fatalf("harness: want knows nothing, got:\n%s", text)
	}
}

// Two cni-gc on the node (a rollout's surge, or two releases): the first
// could not be asked (it answers slowly, past --timeout: it runs, with its
// frees and decisions in memory), the second answers
// that nothing holds the address. Each cni-gc keeps its own latest frees and
// decisions: the one not asked may have freed it. The plugin must not say
// cni-gc knows nothing of the address, and must say the first could not be
// asked.
func TestExplainIPNeverKnowsNothingWhenACNIGCCouldNotBeAsked(t *testing.T) {
	at := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-aaaa": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","freed":[{"at":"2026-01-01T00:00:00Z","reservation":true,"network":"podnet","containerID":"c0ffee","ifName":"eth0","decision":{"at":"2026-01-01T00:00:00Z","row":18,"why":"x","verdict":"free"}}]}`, delay: 3 * time.Second},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
		"kube-system/cni-gc-bbbb": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","reservationsRead":"` + at.Add(-12*time.Second).Format(time.RFC3339Nano) + `"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 1*time.Second,
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-aaaa", "node-a"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", at)
	if err != nil {
		t.Fatal(err)
	}
	var out, js bytes.Buffer
	if err := RenderIP(&out, x); err != nil {
		t.Fatal(err)
	}
	if err := RenderIPJSON(&js, x); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "knows nothing") {
		t.Errorf("says cni-gc knows nothing of the address while cni-gc-aaaa on that node could not be asked:\n%s", text)
	}
	if !strings.Contains(text, "cni-gc-aaaa") {
		t.Errorf("the text does not name cni-gc-aaaa, which could not be asked:\n%s", text)
	}
	var v map[string]any
	_ = json.Unmarshal(js.Bytes(), &v)
	if !strings.Contains(js.String(), "cni-gc-aaaa") {
		t.Errorf("the JSON does not name cni-gc-aaaa, which could not be asked:\n%s", js.String())
	}
}

// cni-gc just restarted: its sweep has not read host-local's reservations
// yet (reservationsRead absent: "none has run, or none could read them"),
// and no attachment of libcni's cache holds the address. A leaked
// reservation of it may be on disk: what holds it is not known. The plugin
// says so in a parenthesis, then concludes "cni-gc knows nothing of this
// address", as for an address the sweep read and found no one holding;
// what cni-gc could not read (Unread) makes it say it cannot tell instead.
func TestExplainIPNeverKnowsNothingBeforeTheSweepRead(t *testing.T) {
	at := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-bbbb": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 5*time.Second, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", at)
	if err != nil {
		t.Fatal(err)
	}
	text := ipText(t, x)
	if strings.Contains(text, "no round of the sweep has read") && strings.Contains(text, "knows nothing of this address") {
		t.Fatalf("says cni-gc knows nothing of the address while no round of its sweep has read host-local's reservations:\n%s", text)
	}
}

// A second cni-gc asked in turn is told on its own clock, from its own page.
func TestExplainIPSecondCNIGCClock(t *testing.T) {
	now := time.Now().UTC()
	progNow := now.Add(-time.Hour)
	read := progNow.Add(-12 * time.Second).Format(time.RFC3339Nano)
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-aaaa": rawPages{at: now, pages: map[string]rawAnswer{
			addressPath: {code: 503, body: "restarting"},
		}},
		"kube-system/cni-gc-bbbb": rawPages{at: progNow, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","reservationsRead":"` + read + `"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 5*time.Second,
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-aaaa", "node-a"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text := ipText(t, x)
	if !strings.Contains(text, "as the sweep 12s ago read them") {
		t.Fatalf("got:\n%s", text)
	}
}

// explain ip: two cni-gc pods on the node (two releases): one Running, whose sweep read the reservations and which
// holds nothing of the address; the other in phase Unknown (its kubelet lost touch; it may run on, and holds its own
// latest frees). The answer says cni-gc knows nothing of the address, and names no cni-gc not asked.
func TestIPNamesCNIGCNotAsked(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-10 * time.Second)
	a := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning)
	b := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-b", "node-a", corev1.PodUnknown)
	b.Labels["app.kubernetes.io/instance"] = "other"
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	e.handle("kube-system/cni-gc-a", &programPages{at: now, addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9", ReservationsRead: &read}}})
	x, err := e.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, js := ipTextAndJSON(t, x)
	if strings.Contains(text, "knows nothing") || !strings.Contains(text, "cni-gc-b") {
		t.Errorf("explain ip says cni-gc knows nothing of the address beside cni-gc kube-system/cni-gc-b (Unknown) of the node, not asked and not named:\n%s", text)
	}
	if !strings.Contains(js, "cni-gc-b") {
		t.Errorf("JSON names no cni-gc not asked either:\n%s", js)
	}
}

// explain ip: the first cni-gc of the node could not be asked (listener off), the second answers nothing: named on Not asked.
func TestIPNamesFirstCNIGCCouldNotBeAsked(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-10 * time.Second)
	a := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning, "--status-bind-address=0")
	b := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-b", "node-a", corev1.PodRunning)
	e := newFakeCluster(t, a, b).closingAnswers().allowingReviews()
	e.handle("kube-system/cni-gc-b", &programPages{at: now, addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9", ReservationsRead: &read}}})
	x, err := e.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := ipTextAndJSON(t, x)
	if strings.Contains(text, "knows nothing") || !strings.Contains(text, "Not asked: cni-gc kube-system/cni-gc-a") {
		t.Errorf("%s", text)
	}
}

// explain ip of an address cni-gc freed lately (the attachment of pod apps/web, gone), while cni-gc still holds the
// pod's PU (its destroy failed on its other network: waiting for a retry). The JSON tells that PU (pus); the text,
// made from it, tells the pod of the free and not the PU.
func TestIPTextTellsFreedPodsPU(t *testing.T) {
	now := time.Now().UTC()
	read := now.Add(-10 * time.Second)
	checked := now.Add(-5 * time.Second)
	next := now.Add(8 * time.Second)
	a := programPod("podsweeper-cni-gc", "r", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning)
	e := newFakeCluster(t, a).closingAnswers().allowingReviews()
	e.handle("kube-system/cni-gc-a", &programPages{at: now,
		addresses: map[string]*AddressStatus{"10.88.0.9": {IP: "10.88.0.9", ReservationsRead: &read, Freed: []FreedAddress{{
			At: now.Add(-20 * time.Second), Network: "podnet", ContainerID: "3a9f0c1b2d4e5f", IfName: "eth0",
			PodNamespace: "apps", PodName: "web", PodUID: "uid-web",
			Decision: FreeDecision{At: now.Add(-20 * time.Second), Reason: "PodGone", Row: 3, Why: "sandbox gone", Verdict: "free"}}}}},
		pus: []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", State: "waiting for a retry", Age: "5m", LastChecked: &checked,
			LastRow: 1, Why: "pod not found", Attempts: 2, NextAttempt: &next, LastError: "cni: DEL of network other failed"}}})
	x, err := e.cluster(5*time.Second).explainIP(testContext(t), "10.88.0.9", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	text, js := ipTextAndJSON(t, x)
	if !strings.Contains(js, `"puID": "uid-web"`) {
		t.Fatalf("JSON does not tell the PU:\n%s", js)
	}
	if !strings.Contains(text, "waiting for a retry") && !strings.Contains(text, "PU ") {
		t.Errorf("JSON tells cni-gc's PU uid-web of the pod of the free (waiting for a retry, 2 attempts); the text does not:\n%s", text)
	}
}

// explain.md:68-70: a program's times are told from when it answered, not
// later: cni-gc's address page answered, then its status page was slow.
func TestIPTimesFromWhenItAnswered(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"))
	var answered time.Time
	e.handle("kube-system/cni-gc-a", &pageFuncs{
		delay: map[string]time.Duration{"/debug/podsweeper": 3 * time.Second},
		address: func(ip string) []byte {
			answered = time.Now()
			return jsonBytes(t, AddressStatus{IP: ip, Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
				PodNamespace: "apps", PodName: "web", PodUID: "uid-web", Written: answered.Add(-time.Minute),
				Decision: &FreeDecision{At: answered.Add(-8 * time.Second), Reason: "PodGone", Row: 1, Why: "the runtime lists it ready", Verdict: "keep"}}}})
		},
	})
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Logf("address answered at %s, told at %s:\n%s", answered.Format("15:04:05.000"), x.At.Format("15:04:05.000"), out)
	if !strings.Contains(out, "added 1m0s ago") || !strings.Contains(out, "freeing     8s ago") {
		t.Errorf("cni-gc answered that the attachment was added 1m0s and decided 8s before its answer; the plugin tells them from %v later", x.At.Sub(answered).Round(time.Millisecond))
	}
}

// explain.md:275-276: "The plugin adds the pod each attachment names as the
// API server has it now, and cni-gc's PU of it". An attachment cni-gc never
// touches (its file name is not libcni's), of a pod that is gone, whose PU
// cni-gc's engine holds: the text tells neither the pod now nor the PU,
// though the plugin gathered both (its JSON has them).
func TestIPNeverTouchedAttachmentPod(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"))
	e.handle("kube-system/cni-gc-a", &pageFuncs{
		status: func() []byte {
			checked := time.Now().Add(-8 * time.Second)
			return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-web", Pod: "apps/web", SandboxID: "3a9f0c1b2d4e5", State: "waiting for a retry", Age: "5m",
				LastChecked: &checked, LastRow: 1, Why: "pod not found", Attempts: 4, LastError: "cni: entry cannot be used for a DEL"}})
		},
		address: func(ip string) []byte {
			return jsonBytes(t, AddressStatus{IP: ip, Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5", IfName: "eth0",
				PodNamespace: "apps", PodName: "web", PodUID: "uid-web", Written: time.Now().Add(-5 * time.Minute), File: "podnet-renamed",
				NeverTouched: "its file name is not libcni's for its network, podnet-3a9f0c1b2d4e5-eth0"}}})
		},
	})
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b, j bytes.Buffer
	_ = RenderIP(&b, x)
	_ = RenderIPJSON(&j, x)
	out := b.String()
	t.Log(out)
	if !strings.Contains(j.String(), `"puID": "uid-web"`) {
		t.Fatalf("the plugin did not gather the PU: %s", j.String())
	}
	if !strings.Contains(out, "gone") || !strings.Contains(out, "waiting for a retry") {
		t.Errorf("the attachment names pod apps/web (UID uid-web): the API server has no such pod, and cni-gc holds its PU waiting for a retry (both in the JSON); the text says neither")
	}
}

// explain.md:65-66 ("explain ip asks each cni-gc of the node in turn until
// one answers for that address") and 269-275: cni-gc answered what holds the
// address; only its engine's status page (the PUs, which the plugin adds)
// failed. The plugin drops the answer and says cni-gc could not be asked.
func TestIPAnswerDroppedForStatusPage(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", "uid-web", "node-a"))
	e.handle("kube-system/cni-gc-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case addressPath:
			_, _ = w.Write(jsonBytes(t, AddressStatus{IP: r.URL.Query().Get("ip"), Attachments: []AttachmentStatus{{Network: "podnet", ContainerID: "3a9f0c1b2d4e5",
				IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: "uid-web", Written: time.Now().Add(-time.Minute)}}}))
		case "/debug/podsweeper":
			http.Error(w, "no deletion engine", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	if !strings.Contains(out, "attachment") {
		t.Errorf("cni-gc answered that pod apps/web's attachment holds 10.88.0.4; the plugin drops that answer and says cni-gc could not be asked")
	}
}

// explain.md:269-276: several attachments hold the address: the live pod's on
// two networks, and a stale one of an earlier pod of that name. Each is told
// with its pod now and cni-gc's PU of it.
func TestIPSeveralAttachments(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("cni-gc", "kube-system", "cni-gc-a", "node-a"), workloadPod("apps", "web", "uid-B", "node-a"))
	e.handle("kube-system/cni-gc-a", &pageFuncs{
		status: func() []byte {
			now := time.Now()
			return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-A", Pod: "apps/web", State: "waiting for a retry", Age: "9m", LastChecked: &now, LastRow: 4, Why: "pod recreated with another UID", Attempts: 2},
				{PUID: "uid-B", Pod: "apps/web", State: "idle", Age: "1m", LastChecked: &now, LastRow: 9, Why: "same pod, same sandbox"}})
		},
		address: func(ip string) []byte {
			w := time.Now().Add(-time.Minute)
			return jsonBytes(t, AddressStatus{IP: ip, Attachments: []AttachmentStatus{
				{Network: "podnet", ContainerID: "bbbbbbbbbbbbb", IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: "uid-B", Written: w},
				{Network: "othernet", ContainerID: "bbbbbbbbbbbbb", IfName: "net1", PodNamespace: "apps", PodName: "web", PodUID: "uid-B", Written: w},
				{Network: "podnet", ContainerID: "aaaaaaaaaaaaa", IfName: "eth0", PodNamespace: "apps", PodName: "web", PodUID: "uid-A", Written: w.Add(-9 * time.Minute)},
			}})
		},
	})
	x, err := e.c.explainIP(context.Background(), "10.88.0.4", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := ipText(t, x)
	t.Log(out)
	if strings.Count(out, "live on node node-a: Running.") != 2 || !strings.Contains(out, "gone: the pod of that name now is another (UID uid-B).") ||
		strings.Count(out, "row 9 of the decision table") != 2 || strings.Count(out, "row 4 of the decision table") != 1 {
		t.Error("attachments not told each with its pod and PU")
	}
}

// adapters/cni addresses.go:37-39 (ReservationsRead: "nil: none has yet (or
// none could read them)"), as explain.md:269-275 says the plugin tells what
// cni-gc holds and decides nothing itself: cni-gc's page leaves
// reservationsRead out; the plugin asserts that no sweep has run yet.
func TestIPReservationsNotReadNotToldAsNoSweepYet(t *testing.T) {
	x := &IPExplanation{Now: time.Now(), IP: "10.88.0.200", Node: "node-a",
		Program: &Program{Program: "cni-gc", Namespace: "kube-system", Pod: "cni-gc-a", Node: "node-a"},
		Address: &AddressStatus{IP: "10.88.0.200"}, At: time.Now()}
	out := ipText(t, x)
	t.Log(out)
	if strings.Contains(out, "no sweep of host-local's reservations has run yet") {
		t.Errorf("cni-gc's page says only that no round read host-local's reservations (none has, or none could); the plugin says no sweep has run yet")
	}
}

// addressPages serves cni-gc's address page beside programPages.
type addressPages struct {
	programPages
	addr AddressStatus
}

func (p *addressPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == addressPath {
		w.Header().Set(k8s.TimeHeader, p.at.Format(time.RFC3339Nano))
		_ = json.NewEncoder(w).Encode(p.addr)
		return
	}
	p.programPages.ServeHTTP(w, r)
}

// cniGCAnsweringAt is a cni-gc answering addressPath with addr (JSON) and its status page with no PU.
func cniGCAnsweringAt(t *testing.T, addr string) http.Handler {
	t.Helper()
	return servePages(clockNow, "", map[string]rawAnswer{
		addressPath:         {code: 200, body: addr},
		"/debug/podsweeper": {code: 200, body: "[]"},
	})
}
