package main

// audit57's own fakes: a fake clientset for the API server's reads, and an
// httptest server standing in for the API server's pods/portforward (SPDY;
// it refuses WebSockets so the plugin falls back, as kubectl does), whose
// streams are served by an http.Handler per program's pod.

import (
	"bufio"
	"bytes"
	"context"
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
	streamspdy "k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// a57Now is the audit's fixed "now" on every clock.
var a57Now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// a57CS is a fake clientset whose CoreV1().RESTClient() is a real one to the
// fake port-forward server (the plugin builds the port-forward's URL from it).
type a57CS struct {
	*fake.Clientset
	rc rest.Interface
}

func (c a57CS) CoreV1() corev1client.CoreV1Interface {
	return a57Core{CoreV1Interface: c.Clientset.CoreV1(), rc: c.rc}
}

type a57Core struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c a57Core) RESTClient() rest.Interface { return c.rc }

// a57Forward serves pods/portforward: each program pod ("ns/name") has a handler.
type a57Forward struct {
	mu    sync.Mutex
	pods  map[string]http.Handler
	srv   *httptest.Server
	conns []httpstream.Connection
}

func (f *a57Forward) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /api/v1/namespaces/NS/pods/NAME/portforward
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 7 || parts[6] != "portforward" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "no websockets here", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	h := f.pods[parts[3]+"/"+parts[5]]
	f.mu.Unlock()
	if h == nil {
		http.Error(w, "error dialing backend: no such pod", http.StatusInternalServerError)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	conn := streamspdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		go func() {
			<-replySent
			if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
				_ = s.Close()
				return
			}
			serveStream(h, s)
		}()
		return nil
	})
	if conn == nil {
		return
	}
	f.mu.Lock()
	f.conns = append(f.conns, conn)
	f.mu.Unlock()
	<-conn.CloseChan()
}

// serveStream reads one HTTP request from s and writes h's answer to it.
func serveStream(h http.Handler, s httpstream.Stream) {
	defer s.Close()
	req, err := http.ReadRequest(bufio.NewReader(s))
	if err != nil {
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Close = true
	var buf bytes.Buffer
	_ = resp.Write(&buf)
	_, _ = s.Write(buf.Bytes())
}

// a57Pod is a program's pod of chart (podsweeper-node-agent, ...), release, on node, in phase, with args.
func a57Pod(chart, release, ns, name, node string, phase corev1.PodPhase, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": release}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "p", Args: args}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// a57Page is a program's pages: path → (code, body), each answered with
// TimeHeader at, and EngineHeader engine when not "".
type a57Page struct {
	code int
	body string
}

func a57Program(at time.Time, engine string, pages map[string]a57Page) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set(k8s.TimeHeader, at.Format(time.RFC3339Nano))
		if engine != "" {
			w.Header().Set(k8s.EngineHeader, engine)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(p.code)
		_, _ = w.Write([]byte(p.body))
	})
}

// a57Cluster is a cluster of objs (fake API server) whose program pods answer handlers ("ns/name").
func a57Cluster(t *testing.T, handlers map[string]http.Handler, objs ...runtime.Object) *cluster {
	t.Helper()
	f := &a57Forward{pods: handlers}
	f.srv = httptest.NewServer(f)
	t.Cleanup(func() {
		f.mu.Lock()
		for _, c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	cfg := &rest.Config{Host: f.srv.URL}
	real, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs := a57CS{Clientset: fake.NewSimpleClientset(objs...), rc: real.CoreV1().RESTClient()}
	return &cluster{config: cfg, cs: cs, timeout: 10 * time.Second}
}

// a57Ctx is a test's context.
func a57Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// a57Render renders x as text and as JSON.
func a57RenderPod(t *testing.T, x *PodExplanation) (string, string) {
	t.Helper()
	var txt, js bytes.Buffer
	if err := RenderPod(&txt, x); err != nil {
		t.Fatal(err)
	}
	if err := RenderPodJSON(&js, x); err != nil {
		t.Fatal(err)
	}
	return txt.String(), js.String()
}

func a57RenderIP(t *testing.T, x *IPExplanation) (string, string) {
	t.Helper()
	var txt, js bytes.Buffer
	if err := RenderIP(&txt, x); err != nil {
		t.Fatal(err)
	}
	if err := RenderIPJSON(&js, x); err != nil {
		t.Fatal(err)
	}
	return txt.String(), js.String()
}
