package main

// A static pod is one pod under its two UIDs (the kubelet's, and its mirror pod's in the API server): asked by
// either, with --uid alone too, the PUs under both are told.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:12-13: "A static pod is one pod under its two UIDs (the
// kubelet's, and its mirror pod's in the API server): asked by either,
// with `--uid` alone too, the PUs under both are told."
// cni-gc holds the static pod's PU under the kubelet's UID (its PUs come
// from libcni's cache, K8S_POD_UID; explain.md:69-71: "as its PUs and
// libcni's cache know it"), and no PU is ever created under the mirror's
// UID (adapters/k8s/wiring.go:182-185). Asked by the mirror pod's UID
// alone, the plugin must tell that PU.
func TestStaticPodByMirrorUIDAloneToldUnderKubeletUID(t *testing.T) {
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

// explain.md:12-13: a static pod asked by its kubelet UID alone, the
// cluster controller holding its PU under the mirror UID: both told.
func TestStaticPodByKubeletUIDWithController(t *testing.T) {
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

// explain.md:13-14, 54-56: a static pod asked by its mirror pod's UID alone,
// its PU under the kubelet's UID on a node's program named <name>-<node>.
func TestStaticPodByEitherUIDTellsBothPUs(t *testing.T) {
	const kubelet, mirror = "aaaaaaaa-0000-0000-0000-00000000000k", "bbbbbbbb-0000-0000-0000-00000000000m"
	agent := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, kubelet, "kube-system/etcd-node-a")}}
	ctrl := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, mirror, "kube-system/etcd-node-a")}}
	mp := workloadPod("kube-system", "etcd-node-a", mirror, "node-a")
	mp.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
	api := agentAndController(t, agent, ctrl, mp)
	for _, uid := range []string{mirror, kubelet} {
		x, err := api.cluster(5*time.Second).explainPod(testContext(t), "", "", uid, "", askedAt)
		if err != nil {
			t.Fatal(err)
		}
		out := podText(t, x)
		if x.Pod == nil || !strings.Contains(out, "PU "+kubelet) || !strings.Contains(out, "PU "+mirror) {
			t.Errorf("asked by %s:\n%s", uid, out)
		}
	}
}

// explain.md:14-15: "A static pod is one pod under its two UIDs (the
// kubelet's, and its mirror pod's in the API server): asked by either, with
// `--uid` alone too, the PUs under both are told." Asked by the kubelet's
// UID alone, while the node agent just restarted (503), the cluster
// controller's PU under the mirror pod's UID is not told.
func TestStaticPodByKubeletUIDAloneControllerPU(t *testing.T) {
	c := newFakeCluster(t, etcdMirror(),
		runningProgram("podsweeper-node-agent", "ps", "agent-a", "node-a"),
		runningProgram("podsweeper-cluster-controller", "ps", "ctrl", "")).closingAnswers().listingEventsWhole()
	c.handle("ps/agent-a", &programPages{at: askedAt, status: 503, body: "not yet\n"})
	c.handle("ps/ctrl", &programPages{at: askedAt, pus: []k8s.PUStatus{{PUID: "MIRROR", Pod: "kube-system/etcd-node-a", State: "idle", Age: "1m"}}})
	x, err := c.inNamespace("").explainPod(testContext(t), "", "", "KUBELET", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "PU MIRROR of pod kube-system/etcd-node-a") {
		t.Fatalf("asked by the kubelet's UID alone, the controller's PU under the mirror pod's UID is not told:\n%s", out)
	}
}

// explain.md:15-16, 85-87: "A static pod is one pod under its two UIDs (the kubelet's, and its mirror pod's in the
// API server)"; "A static pod is known by its kubelet's UID too (its mirror pod's `kubernetes.io/config.mirror`), as
// its PUs and libcni's cache know it." And explain.md:35: `-o json` prints what the text is made
// from, so every line of text says what the JSON says. Asked by name, a
// static pod's JSON says its kubelet UID (pod.staticUID); the text never says it: a reader of the text cannot tell
// that a PU under that UID would be this pod's.
func TestStaticUIDToldInText(t *testing.T) {
	const kubeletUID = "8d3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b"
	mirror := workloadPod("kube-system", "etcd-node-a", firstUID, "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubeletUID}
	prog := servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{k8s.StatusPath: {code: http.StatusOK, body: `[]`}})
	c := clusterServing(t, map[string]http.Handler{"podsweeper/na-a": prog},
		programPod("podsweeper-node-agent", "na", "podsweeper", "na-a", "node-a", corev1.PodRunning),
		mirror,
	)
	x, err := c.explainPod(testContext(t), "kube-system", "etcd-node-a", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, js := podTextAndJSON(t, x)
	if !strings.Contains(js, `"staticUID": "`+kubeletUID+`"`) {
		t.Fatalf("JSON says no staticUID:\n%s", js)
	}
	if !strings.Contains(txt, kubeletUID) {
		t.Errorf("JSON says the pod's kubelet UID is %s (pod.staticUID); the text says nothing of it:\n%s", kubeletUID, txt)
	}
}

// explain.md:15-16 and :85-87: a static pod asked by name whose mirror pod is recreated (another UID, the same
// kubelet's UID) while its programs are asked: the PUs under the kubelet's UID and the mirror pod's are told, and the
// mirror pod's recreation is said in a Note.
func TestStaticMirrorRecreatedWhileAsked(t *testing.T) {
	const kubelet, mirror1, mirror2 = "9c3f5e2a1b7d4e6f8a0b2c4d6e8f0a1b", firstUID, secondUID
	etcd := func(uid string) *corev1.Pod {
		p := workloadPod("kube-system", "etcd-node-a", uid, "node-a")
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
		return p
	}
	var c *cluster
	agent := onFirstRequest(statusPage(t, k8s.EngineRunning, idlePU(kubelet, "kube-system/etcd-node-a")), func() {
		cs := c.cs.(hybridCS).Clientset
		ctx := context.Background()
		_ = cs.CoreV1().Pods("kube-system").Delete(ctx, "etcd-node-a", metav1.DeleteOptions{})
		_, _ = cs.CoreV1().Pods("kube-system").Create(ctx, etcd(mirror2), metav1.CreateOptions{})
	})
	c = clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": agent,
		"podsweeper/cc-0":    statusPage(t, k8s.EngineRunning, idlePU(mirror1, "kube-system/etcd-node-a")),
	},
		etcd(mirror1),
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "kube-system", "etcd-node-a", kubelet, "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantSays(t, "the text", txt, "PU "+kubelet+" of pod kube-system/etcd-node-a")
	wantSays(t, "the text", txt, "PU "+mirror1+" of pod kube-system/etcd-node-a")
	wantSays(t, "the text", txt, "was recreated while its programs were asked")
	wantSays(t, "the text", txt, "It is the mirror pod of a static pod, whose kubelet's UID is "+kubelet)
}

// docs/operating/explain.md:16-20: "By a UID alone, the pod is found among the pods the programs hold PUs of, 32 read
// at most: those held under a kubelet's UID (a hash, not a UUID) first, then those named after a node asked, then
// kube-system's, then the others". The static pod kube-system/etcd-node-a is asked by its mirror pod's UID: the node
// agent holds it under its kubelet's UID (a hash), the cluster controller under its earlier mirror pod's UID (a UUID:
// the mirror pod was recreated). 33 other static pods are held by the node agent under kubelet UIDs. The pod held
// under a kubelet's UID is not read among the first: the cluster controller's PU, read first, ranks it as a pod named
// after a node, behind the 33, so that it is left unread and the answer cannot tell what it could have.
func TestStaticPodKubeletUIDReadFirst(t *testing.T) {
	const (
		kubelet = "9c3f5e2a1b7d4e6f8a0b2c4d6e8f0a1b" // a static pod's kubelet UID: a hash
		mirror  = "41aa07c9-55e2-4d3c-a0f1-2b8c6e9d7f10"
		mirror0 = "2b8c6e9d-55e2-4d3c-a0f1-41aa07c97f10" // the earlier mirror pod's
	)
	agentPUs := []k8s.PUStatus{idlePU(kubelet, "kube-system/etcd-node-a")}
	for i := range 33 {
		agentPUs = append(agentPUs, idlePU(fmt.Sprintf("%032x", i+1), fmt.Sprintf("infra/static-%02d-node-x", i)))
	}
	etcd := workloadPod("kube-system", "etcd-node-a", mirror, "node-a")
	etcd.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": statusPage(t, k8s.EngineRunning, agentPUs...),
		"podsweeper/cc-0":    statusPage(t, k8s.EngineRunning, idlePU(mirror0, "kube-system/etcd-node-a")),
	},
		etcd,
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-b", corev1.PodRunning))
	x, err := c.explainPod(testContext(t), "", "", mirror, "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	if x.Pod == nil || x.Name != "etcd-node-a" {
		t.Errorf("the static pod held under a kubelet's UID was not found among the first read:\n%s", txt)
	}
}

// docs/operating/explain.md:14-15: "A static pod is one pod under its two UIDs (the kubelet's, and its mirror
// pod's in the API server): asked by either, with `--uid` alone too, the PUs under both are told."
//
// The static pod kube-system/etcd-node-a: its mirror pod's UID "u-mirror", the kubelet's "u-kubelet". The cluster
// controller holds its PU under the mirror pod's UID. The node agent of node-a is Pending (the node in trouble);
// the one of node-b runs and holds nothing of it. Asked by the kubelet's UID alone (as explain ip or libcni's
// cache shows it), the plugin should tell the cluster controller's PU of that pod.
func TestStaticPodByKubeletUIDAloneWithPendingAgent(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	mirror := *workloadPod("kube-system", "etcd-node-a", "u-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "u-kubelet"}
	c.addPod(mirror)
	c.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-c", statusAndReport([]k8s.PUStatus{recentPU("u-mirror", "kube-system/etcd-node-a")}, ""))
	c.addPod(*programPod("podsweeper-node-agent", "rel", "podsweeper", "agent-a", "node-a", corev1.PodPending))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-b", "node-b", statusAndReport([]k8s.PUStatus{}, ""))

	code, out, errOut := c.run("explain", "pod", "--uid", "u-kubelet", "-o", "json").codeOutErr()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var x PodExplanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatal(err, out)
	}
	told := false
	for _, a := range x.Answers {
		for _, s := range a.PUs {
			if s.PUID == "u-mirror" {
				told = true
			}
		}
	}
	if !told || x.Name != "etcd-node-a" {
		_, text, _ := c.run("explain", "pod", "--uid", "u-kubelet").codeOutErr()
		t.Fatalf("asked by the kubelet's UID, the cluster controller's PU under the mirror pod's UID is not told (pod named %q/%q):\n%s", x.Namespace, x.Name, text)
	}
}

// docs/operating/explain.md:14-15 (as TestStaticPodByKubeletUIDAloneWithPendingAgent), with the cluster controller the only
// program installed (each chart installs on its own: docs/operating/install.md). Asked by the static pod's
// kubelet UID alone, the plugin should name the pod and tell the cluster controller's PU of it under the mirror
// pod's UID; it says podsweeper knows nothing of the pod.
func TestStaticPodByKubeletUIDAloneClusterControllerOnly(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	mirror := *workloadPod("kube-system", "etcd-node-a", "u-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "u-kubelet"}
	c.addPod(mirror)
	c.addProgram("podsweeper-cluster-controller", "podsweeper-cluster", "cc-1", "node-c", statusAndReport([]k8s.PUStatus{recentPU("u-mirror", "kube-system/etcd-node-a")}, ""))

	code, out, errOut := c.run("explain", "pod", "--uid", "u-kubelet").codeOutErr()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "PU u-mirror of pod kube-system/etcd-node-a") {
		t.Fatalf("asked by the kubelet's UID, the cluster controller's PU under the mirror pod's UID is not told:\n%s", out)
	}
}

// docs/operating/explain.md:14-17: a static pod asked by either UID, with
// --uid alone too, the PUs under both are told; by a UID alone, the pod is
// found among the pods the programs hold PUs of, those named after a node
// asked first.
func TestStaticPodByEitherUIDAmongManyPUs(t *testing.T) {
	for _, uid := range []string{"mirror-1", "kubelet-1"} {
		a := newFakeAPI(t).spdyOnly().impersonating()
		p := workloadPod("kube-system", "etcd-node-a", "mirror-1", "node-a")
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "kubelet-1"}
		a.addPod(*p)
		var many []map[string]any
		for i := 0; i < 40; i++ {
			many = append(many, mapPU("uid-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "apps/p"+string(rune('a'+i%26))+string(rune('a'+i/26)), "idle"))
		}
		a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: append(many, mapPU("kubelet-1", "kube-system/etcd-node-a", "idle"))})
		ccPU := mapPU("mirror-1", "kube-system/etcd-node-a", "idle")
		if uid == "kubelet-1" {
			ccPU = mapPU("mirror-1", "kube-system/etcd-node-a", "idle")
		}
		a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{ccPU}})
		out, errs, code := a.run("explain", "pod", "--uid", uid).outErrCode()
		if code != 0 || !strings.Contains(out, "PU kubelet-1 of pod kube-system/etcd-node-a") || !strings.Contains(out, "PU mirror-1 of pod kube-system/etcd-node-a") || !strings.HasPrefix(out, "Pod kube-system/etcd-node-a (UID mirror-1) on node node-a: Running.") {
			t.Errorf("--uid %s: exit %d\n%s\n%s", uid, code, out, errs)
		}
	}
}

// explain.md:60-62: a static pod is known by its kubelet's UID too; --uid
// alone names it from its PU and finds its mirror pod.
func TestStaticPodByKubeletUIDAloneFindsItsMirrorPod(t *testing.T) {
	mirror := workloadPod("kube-system", "etcd-node-a", "uid-mirror", "node-a")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "uid-kubelet"}
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), mirror)
	e.handle("podsweeper/agent-a", &pageFuncs{status: func() []byte {
		now := time.Now()
		return jsonBytes(t, []k8s.PUStatus{{PUID: "uid-kubelet", Pod: "kube-system/etcd-node-a", State: "idle", Age: "1h", LastChecked: &now, LastRow: 9, Why: "same pod, same sandbox"}})
	}})
	x, err := e.c.explainPod(context.Background(), "", "", "uid-kubelet", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if x.Pod == nil || !strings.Contains(out, "Pod kube-system/etcd-node-a (UID uid-mirror) on node node-a: Running.") || strings.Contains(out, "earlier pod") {
		t.Error("static pod by its kubelet UID not found")
	}
}

// staticMirror is a static pod's mirror pod: its API UID mirror, its
// kubelet's UID kubelet.
func staticMirror(ns, name, mirror, kubelet, node string) *corev1.Pod {
	p := workloadPod(ns, name, mirror, node)
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
	return p
}
