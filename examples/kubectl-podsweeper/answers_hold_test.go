package main

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:450-452, the contrast of TestStatusEndedAgentOfAReleaseInAnotherNamespace: two installs of the
// node agent under two release names; the one that ended on node-a, with none of its release in its place, is
// named on a line `Not asked:`.
func TestStatusEndedAgentOfAnotherRelease(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "team-b", "node-agent-b", "node-a", &programPages{engine: k8s.EngineRunning})
	f.addProgram("podsweeper-node-agent", "team-a", "node-agent-a", "node-a", nil)
	f.mu.Lock()
	for i := range f.pods {
		if f.pods[i].Name == "node-agent-a" {
			f.pods[i].Status.Phase = "Failed"
			f.pods[i].Labels["app.kubernetes.io/instance"] = "other"
		}
	}
	f.mu.Unlock()
	r := f.run("status", "--node", "node-a")
	mustContain(t, r.stdout, "Not asked: node-agent team-a/node-agent-a on node node-a is Failed: not asked.")
}

// explain.md:79-82: every replica of a program asked a standby (one namespace, one release): its leader is named on a
// line `Not asked:`, and the answer cannot tell.
func TestStandbyLeaderNamed(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-fghij", "", &programPages{engine: k8s.EngineNotRunning})
	r := f.run("explain", "pod", "apps/cache")
	mustContain(t, r.stdout, "Not asked: the leader of cluster-controller rel")
	mustContain(t, r.stdout, "podsweeper cannot tell all it knows of this pod")
}

// explain.md:92-95: a second cni-gc of the node that could not be asked is named on a line `Not asked:`, and the
// answer then cannot tell all that holds the address.
func TestExplainIPSecondCNIGCUnasked(t *testing.T) {
	f := newFakeAPI(t)
	read := time.Now().Add(-12 * time.Second).UTC()
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-a", "node-a", &programPages{addresses: map[string]*AddressStatus{"10.88.0.13": {IP: "10.88.0.13", ReservationsRead: &read}}})
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-b", "node-a", &programPages{status: 503, body: "not ready\n"})
	r := f.run("explain", "ip", "10.88.0.13", "--node", "node-a")
	mustContain(t, r.stdout, "Not asked: cni-gc kube-system/cni-gc-b (node node-a) could not be asked")
	mustContain(t, r.stdout, "cni-gc cannot tell all that holds this address")
}

// explain.md:77-79: a program whose engine has not listed its Inventory yet answers 503 and could not be asked; the
// answer cannot tell.
func TestStatusPage503CouldNotBeAsked(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-x7k2p", "node-a", &programPages{status: 503, body: "not ready\n"})
	r := f.run("explain", "pod", "apps/cache")
	mustContain(t, r.stdout, "could not be asked: reading its status on port")
	mustContain(t, r.stdout, "answered 503")
	mustContain(t, r.stdout, "podsweeper cannot tell all it knows of this pod: 1 of 1 programs could not be asked")
}

// explain.md:35-36, 90-91: --timeout bounds each program's question whole: a program that answers late could not be
// asked, and the others are asked all the same.
func TestTimeoutBoundsASlowProgramTheOthersAsked(t *testing.T) {
	f := newFakeAPI(t)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(outlasting):
		case <-r.Context().Done():
		}
		w.Write([]byte("[]"))
	})
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-slow", "node-a", slow)
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-abcde", "", &programPages{engine: k8s.EngineRunning})
	r := f.run("explain", "pod", "apps/cache", "--timeout", askTimeout.String())
	mustContain(t, r.stdout, "node-agent podsweeper/node-agent-slow (node node-a) could not be asked")
	mustContain(t, r.stdout, "cluster-controller podsweeper/cc-abcde holds no PU of this pod.")
	if r.took > askTimeout+askSlack {
		t.Errorf("took %v with --timeout %v", r.took, askTimeout)
	}
}

// explain.md:89-90: "An Event series is told at its first time, whose note it keeps, with its count and its last
// time"; explain.md:13-14: an Event of an earlier pod of that name is marked, earlierUID in JSON.
func TestEventSeriesAndEarlierUID(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-x7k2p", "node-a", &programPages{engine: k8s.EngineRunning})
	f.addPod(*workloadPod("apps", "web", "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30", "node-a"))
	now := time.Now()
	f.addEvent(corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30"},
		Reason:         k8s.EventReasonDestroyed, Type: "Normal", ReportingController: "podsweeper", Message: "SandboxChanged: first note",
		EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute)),
		Series:    &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-1 * time.Minute))}})
	f.addEvent(corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web.2"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "apps", Name: "web", UID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"},
		Reason:         k8s.EventReasonDestroyed, Type: "Normal", ReportingController: "podsweeper", Message: "UIDChanged: old",
		EventTime: metav1.NewMicroTime(now.Add(-2 * time.Minute))})
	r := f.run("explain", "pod", "apps/web")
	mustContain(t, r.stdout, "5m0s ago  Normal PUDestroyed, regarding Pod/apps/web (3 times, the last 1m0s ago; the note is the first's): SandboxChanged: first note")
	mustContain(t, r.stdout, "(of an earlier pod of that name, UID 6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21)")
	rj := f.run("explain", "pod", "apps/web", "-o", "json")
	mustContain(t, rj.stdout, `"earlierUID": "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"`)
	if i, j := strings.Index(r.stdout, "first note"), strings.Index(r.stdout, "UIDChanged: old"); i < 0 || j < 0 || i > j {
		t.Errorf("the series is not told at its first time, before the later Event")
	}
}

// explain.md:10-13: a pod recreated on another node at each round: three rounds at most, and the programs of its
// node now are named on a line `Not asked:`.
func TestPodThatKeepsMovingThreeRounds(t *testing.T) {
	f := newFakeAPI(t)
	nodes := []string{"node-a", "node-b", "node-c", "node-d", "node-e"}
	uids := []string{"6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21", "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30",
		"41aa07c9-55e2-4d3c-a0f1-2b8c6e9d7f10", "9d2c4b1a-7e6f-4a3b-8c2d-1e0f9a8b7c6d", "d81e5f0a-3b7c-4e29-a6d4-5c0b9f8e7a12"}
	var step, asked atomic.Int32
	for _, n := range nodes {
		p := &programPages{engine: k8s.EngineRunning}
		p.onStatus = func() {
			asked.Add(1)
			s := step.Add(1)
			f.setAppPods(*workloadPod("apps", "web", uids[s], nodes[s]))
		}
		f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-"+n, n, p)
	}
	f.addPod(*workloadPod("apps", "web", uids[0], nodes[0]))
	r := f.run("explain", "pod", "apps/web")
	if n := asked.Load(); n != 3 {
		t.Errorf("the programs were asked %d times, not 3", n)
	}
	mustContain(t, r.stdout, "Not asked: the programs of node node-d, where the pod runs now (it kept changing while they were asked).")
	mustContain(t, r.stdout, "podsweeper cannot tell all it knows of this pod")
}

// explain.md:141-143: without a permission, the plugin says which in one line, and exits 1.
func TestForbiddenEventsOneLine(t *testing.T) {
	f := newFakeAPI(t)
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-x7k2p", "node-a", &programPages{engine: k8s.EngineRunning})
	f.forbid = []string{"GET /api/v1/namespaces/default/events"}
	r := f.run("explain", "pod", "apps/cache")
	if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 ||
		!strings.Contains(r.stderr, "forbidden: you may not list events in namespace default") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// explain.md:37-39: --help after a command prints that command's lines and the flags it reads, on stdout, status 0.
func TestCommandHelp(t *testing.T) {
	f := newFakeAPI(t)
	r := f.run("explain", "ip", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "kubectl podsweeper explain ip ADDRESS --node NODE [-o json]") ||
		!strings.Contains(r.stdout, "--timeout") || strings.Contains(r.stdout, "--uid") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
}

// explain.md:31-32: --namespace is the programs' namespace, not the pod's: NAME alone is in the context's namespace.
func TestNamespaceIsTheProgramsNotThePods(t *testing.T) {
	f := newFakeAPI(t) // its kubeconfig's context namespace is "apps"
	checked := time.Now().Add(-5 * time.Second).UTC()
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-x7k2p", "node-a", &programPages{engine: k8s.EngineRunning,
		pus: []k8s.PUStatus{{PUID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21", Pod: "apps/web", State: "idle", Age: "1m0s", LastChecked: &checked, LastRow: 5, Why: "same pod"}}})
	f.addPod(*workloadPod("apps", "web", "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21", "node-a"))
	r := f.run("explain", "pod", "web", "-n", "podsweeper")
	mustContain(t, r.stdout, "Pod apps/web (UID 6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21) on node node-a: Running.")
	mustContain(t, r.stdout, "PU 6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21 of pod apps/web")
	mustContain(t, r.stdout, "Not asked: the programs of other namespaces than podsweeper")
}

// explain.md:15-16: a static pod is one pod under its two UIDs: asked by either, with --uid alone too, the PUs under
// both are told.
func TestStaticPodByEitherUIDAlone(t *testing.T) {
	f := newFakeAPI(t)
	const mirror, kubelet = "41aa07c9-55e2-4d3c-a0f1-2b8c6e9d7f10", "3c1f0e9ad2b84c5e8f7a6b5c4d3e2f10"
	checked := time.Now().Add(-5 * time.Second).UTC()
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-a", "node-a", &programPages{engine: k8s.EngineRunning,
		pus: []k8s.PUStatus{{PUID: kubelet, Pod: "kube-system/etcd-node-a", State: "idle", Age: "1h0m0s", LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}}})
	f.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-abcde", "", &programPages{engine: k8s.EngineRunning,
		pus: []k8s.PUStatus{{PUID: mirror, Pod: "kube-system/etcd-node-a", State: "idle", Age: "1h0m0s", LastChecked: &checked, LastRow: 5, Why: "same pod"}}})
	p := workloadPod("kube-system", "etcd-node-a", mirror, "node-a")
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: kubelet}
	f.addPod(*p)
	for _, uid := range []string{mirror, kubelet} {
		r := f.run("explain", "pod", "--uid", uid)
		mustContain(t, r.stdout, "PU "+kubelet+" of pod kube-system/etcd-node-a")
		mustContain(t, r.stdout, "PU "+mirror+" of pod kube-system/etcd-node-a")
		mustContain(t, r.stdout, "It is the mirror pod of a static pod")
	}
}

// explain.md:98-102: a program's times are told from when its page began to answer (its TimeHeader, on its own
// clock), not from when the command began: a program whose clock is an hour behind is not told as an hour older.
func TestTimesFromThePagesClock(t *testing.T) {
	f := newFakeAPI(t)
	behind := -time.Hour
	checked := time.Now().Add(behind - 5*time.Second).UTC()
	pages := &programPages{engine: k8s.EngineRunning, pus: []k8s.PUStatus{{PUID: "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21", Pod: "apps/web",
		State: "idle", Age: "4m12s", LastChecked: &checked, LastRow: 9, Why: "same pod, same sandbox"}}}
	f.addProgram("podsweeper-node-agent", "podsweeper", "node-agent-x7k2p", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &Clock{ResponseWriter: w, at: time.Now().Add(behind)}
		pages.ServeHTTP(rec, r)
	}))
	f.addPod(*workloadPod("apps", "web", "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21", "node-a"))
	r := f.run("explain", "pod", "apps/web")
	mustContain(t, r.stdout, "last check    5s ago: row 9 of the decision table")
}

// Clock rewrites the page's TimeHeader to at: a program whose clock is elsewhere.
type Clock struct {
	http.ResponseWriter
	at time.Time
}

func (c *Clock) WriteHeader(code int) {
	c.Header().Set(k8s.TimeHeader, c.at.UTC().Format(time.RFC3339Nano))
	c.ResponseWriter.WriteHeader(code)
}

func (c *Clock) Write(b []byte) (int, error) {
	if c.Header().Get(k8s.TimeHeader) != c.at.UTC().Format(time.RFC3339Nano) {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}
