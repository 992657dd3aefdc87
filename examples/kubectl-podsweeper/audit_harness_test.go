package main

// The auditor's harness, on the fake API server of forwardapi_test.go: the
// WebSocket upgrade refused, so the plugin falls back to SPDY as it does
// against an older API server; each program pod's answers given whole.

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// audEnv is a cluster: programs' handlers by "namespace/name".
type audEnv struct {
	*forwardServer
	refuse map[string]*metav1.Status // "namespace/name" -> the API server's refusal of its port-forward
	hang   map[string]bool           // "namespace/name" -> its streams are never acknowledged
	// wsForbidden: the WebSocket's upgrade (verb get) is refused 403, as
	// for a user who may create pods/portforward but not get it.
	wsForbidden bool
	fake        *fake.Clientset
	c           *cluster
}

func newAudEnv(t *testing.T, objs ...runtime.Object) *audEnv {
	t.Helper()
	e := &audEnv{refuse: map[string]*metav1.Status{}, hang: map[string]bool{}}
	e.forwardServer = newForwardServer(t, 0, e.upgrade)
	e.fake = fake.NewClientset(objs...)
	selectEvents(e.fake)
	e.c = e.hybridCluster(t, e.fake, 10*time.Second)
	return e
}

func (e *audEnv) handle(nsName string, h http.Handler) { e.setHandler(nsName, h) }

// upgrade answers a port-forward: a refusal of the pod's, 404 for a pod
// without a handler, the WebSocket upgrade refused (400, or 403 when
// wsForbidden), the SPDY one taken, its answers whole with a Content-Length.
func (e *audEnv) upgrade(w http.ResponseWriter, r *http.Request, ns, name string) *podStreams {
	e.mu.Lock()
	h, st, hang, forbidden := e.handlers[ns+"/"+name], e.refuse[ns+"/"+name], e.hang[ns+"/"+name], e.wsForbidden
	e.mu.Unlock()
	switch {
	case st != nil:
		writeStatus(w, int(st.Code), st)
	case h == nil:
		http.Error(w, "no such pod", http.StatusNotFound)
	case isWebSocket(r) && forbidden:
		writeStatus(w, http.StatusForbidden, audForbidden(`pods "x" is forbidden: cannot get resource "pods/portforward"`))
	case isWebSocket(r):
		http.Error(w, "websockets not served here", http.StatusBadRequest)
	default:
		return &podStreams{h: h, reply: replyLength, hang: hang}
	}
	return nil
}

// audProgramPod is a Running pod of a program's chart.
func audProgramPod(prog, ns, name, node string, args ...string) *corev1.Pod {
	return programPod("podsweeper-"+prog, prog, prog, ns, name, node, corev1.PodRunning, args...)
}

// audPages serves a program's status page and, when report is not nil,
// its dry run's report; delay holds each answer of the page named.
type audPages struct {
	status   func() []byte
	report   func() []byte
	address  func(ip string) []byte
	delay    map[string]time.Duration
	requests chan string
}

func (p *audPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.requests != nil {
		select {
		case p.requests <- r.URL.Path:
		default:
		}
	}
	if d := p.delay[r.URL.Path]; d > 0 {
		time.Sleep(d)
	}
	var b []byte
	switch r.URL.Path {
	case "/debug/podsweeper":
		if p.status == nil {
			b = []byte("[]")
		} else {
			b = p.status()
		}
	case "/debug/podsweeper/dry-run":
		if p.report == nil {
			http.NotFound(w, r)
			return
		}
		b = p.report()
	case addressPath:
		if p.address == nil {
			http.NotFound(w, r)
			return
		}
		b = p.address(r.URL.Query().Get("ip"))
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// apierrorsStatus is a StatusError built from a Status.
type apierrorsStatus struct{ st metav1.Status }

func (e *apierrorsStatus) Error() string         { return e.st.Message }
func (e *apierrorsStatus) Status() metav1.Status { return e.st }
