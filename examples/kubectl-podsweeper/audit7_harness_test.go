package main

// Auditor X's harness: a fake clientset for the API server's reads, and an
// httptest server that speaks the port-forward subresource (SPDY; the
// WebSocket attempt is refused as an upgrade failure) to per-pod handlers
// standing in for the programs' status listeners.

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

type auditXCS struct {
	*fake.Clientset
	rc rest.Interface
}

func (c auditXCS) CoreV1() corev1client.CoreV1Interface {
	return auditXCore{c.Clientset.CoreV1(), c.rc}
}

type auditXCore struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c auditXCore) RESTClient() rest.Interface { return c.rc }

// auditXForwarder serves pods/portforward for the pods of handlers
// ("namespace/name").
type auditXForwarder struct {
	mu       sync.Mutex
	handlers map[string]http.Handler
}

func (f *auditXForwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /api/v1/namespaces/NS/pods/NAME/portforward
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 7 || parts[6] != "portforward" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	_, forbid := f.handlers[parts[3]+"/"+parts[5]].(auditXForbid)
	f.mu.Unlock()
	if forbid {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"` + parts[5] + `\" is forbidden: User \"bob\" cannot create resource \"pods/portforward\"","reason":"Forbidden","details":{"name":"` + parts[5] + `","kind":"pods"},"code":403}`))
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "websockets not served here", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	h := f.handlers[parts[3]+"/"+parts[5]]
	f.mu.Unlock()
	if h == nil {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods not found","reason":"NotFound","code":404}`, http.StatusNotFound)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		go func() {
			<-replySent
			if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
				_ = s.Close()
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(s))
			if err != nil {
				_ = s.Reset()
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			resp := rec.Result()
			body := rec.Body.Bytes()
			resp.Body = auditXNopCloserOf(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Close = true
			_ = resp.Write(s)
			_ = s.Close()
		}()
		return nil
	})
	if conn != nil {
		<-conn.CloseChan()
	}
}

// auditXCluster builds a cluster of the fake clientset objs and the program
// pages of handlers, with timeout.
func auditXCluster(t *testing.T, handlers map[string]http.Handler, timeout time.Duration, objs ...runtime.Object) (*cluster, *fake.Clientset) {
	t.Helper()
	f := &auditXForwarder{handlers: handlers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	real, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fc := fake.NewSimpleClientset(objs...)
	return &cluster{config: cfg, cs: auditXCS{fc, real.CoreV1().RESTClient()}, timeout: timeout}, fc
}

// auditXProgramPod is a Running pod of a program's chart.
func auditXProgramPod(chart, ns, name, node string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "rel"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Args: args}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// auditXPage is a program's pages: path (without query) -> code and body,
// answered with Podsweeper-Time at.
type auditXPage struct {
	at    time.Time
	pages map[string]auditXAnswer
}

type auditXAnswer struct {
	code  int
	body  string
	delay time.Duration
}

func (p auditXPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, ok := p.pages[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if a.delay > 0 {
		time.Sleep(a.delay)
	}
	if !p.at.IsZero() {
		w.Header().Set("Podsweeper-Time", p.at.UTC().Format(time.RFC3339Nano))
	}
	w.WriteHeader(a.code)
	_, _ = w.Write([]byte(a.body))
}

type auditXNopCloser struct{ *bytes.Reader }

func (auditXNopCloser) Close() error { return nil }

func auditXNopCloserOf(r *bytes.Reader) auditXNopCloser { return auditXNopCloser{r} }

// auditXForbid as a pod's handler: its port-forward is refused 403.
type auditXForbid struct{}

func (auditXForbid) ServeHTTP(http.ResponseWriter, *http.Request) {}
