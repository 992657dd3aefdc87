package main

// Audit Y's harness: an API server whose pods/portforward is served over SPDY by an httptest server (the WebSocket
// upgrade is refused, so the plugin falls back as it does against an API server without WebSockets), and whose
// reads are a fake clientset's, so that a test can change the pods and Events between reads.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

type ayHybrid struct {
	*fake.Clientset
	rc rest.Interface
}

func (h ayHybrid) CoreV1() corev1client.CoreV1Interface {
	return ayCore{h.Clientset.CoreV1(), h.rc}
}

type ayCore struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c ayCore) RESTClient() rest.Interface { return c.rc }

// ayEnv is the API server and the programs' pages, by pod (namespace/name).
type ayEnv struct {
	t     *testing.T
	srv   *httptest.Server
	fake  *fake.Clientset
	mu    sync.Mutex
	pages map[string]http.Handler
}

func newAYEnv(t *testing.T, objs ...runtime.Object) *ayEnv {
	e := &ayEnv{t: t, fake: fake.NewSimpleClientset(objs...), pages: map[string]http.Handler{}}
	e.fake.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *ayEnv) page(ns, name string, h http.Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pages[ns+"/"+name] = h
}

func (e *ayEnv) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// api v1 namespaces NS pods NAME portforward
	if len(parts) != 7 || parts[6] != "portforward" {
		http.Error(w, "not served", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "no websockets here", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	h := e.pages[parts[3]+"/"+parts[5]]
	e.mu.Unlock()
	if h == nil {
		http.Error(w, "error dialing backend: no such pod", http.StatusInternalServerError)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		go func() {
			<-replySent
			switch s.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeData:
				req, err := http.ReadRequest(bufio.NewReader(s))
				if err != nil {
					_ = s.Close()
					return
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				res := rec.Result()
				res.Close = true
				_ = res.Write(s)
				_ = s.Close()
			default:
				_ = s.Close()
			}
		}()
		return nil
	})
	if conn == nil {
		return
	}
	<-conn.CloseChan()
}

func (e *ayEnv) cluster() *cluster {
	cfg := &rest.Config{Host: e.srv.URL}
	real, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return &cluster{config: cfg, cs: ayHybrid{e.fake, real.CoreV1().RESTClient()}, timeout: 5 * time.Second}
}

// ayProgPod is a program's pod, Running on node (cluster-controller: node is where it runs).
func ayProgPod(chart, ns, name, node string, phase corev1.PodPhase, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": "podsweeper-" + chart, "app.kubernetes.io/instance": "r"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Args: args}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func ayPod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// ayPages is a program's pages: its status page's PUs, and its dry run's report (nil: no dry run, 404), each
// answered at at on the program's clock.
type ayPages struct {
	mu      sync.Mutex
	pus     []k8s.PUStatus
	reports []k8s.WouldDestroy
	total   int
	at      time.Time
	status  int // the status page's code; 0: 200
	body    string
	address any
	calls   map[string]int
	hook    func(path string)
}

func (p *ayPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	p.calls[r.URL.Path]++
	hook := p.hook
	p.mu.Unlock()
	if hook != nil {
		hook(r.URL.Path)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() {
		w.Header().Set(k8s.TimeHeader, p.at.Format(time.RFC3339Nano))
	}
	switch r.URL.Path {
	case k8s.StatusPath:
		if p.status != 0 {
			http.Error(w, p.body, p.status)
			return
		}
		pus := p.pus
		if pus == nil {
			pus = []k8s.PUStatus{}
		}
		_ = json.NewEncoder(w).Encode(pus)
	case k8s.DryRunPath:
		if p.reports == nil {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"total": p.total, "reports": p.reports})
	case addressPath:
		if p.address == nil {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(p.address)
	default:
		http.NotFound(w, r)
	}
}

func ayText(t *testing.T, x *PodExplanation) string {
	var b strings.Builder
	if err := RenderPod(&b, x); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var ayCtx = context.Background()
