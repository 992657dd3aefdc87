package main

import (
	"bufio"
	"fmt"
	"io"
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

// spdyHybrid is the fake clientset for the API server's objects, with a
// real REST client (pointing at an httptest server) for the port-forward's URL.
type spdyHybrid struct {
	*fake.Clientset
	real kubernetes.Interface
}

func (h spdyHybrid) CoreV1() corev1client.CoreV1Interface {
	return spdyCore{h.Clientset.CoreV1(), h.real.CoreV1().RESTClient()}
}

type spdyCore struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c spdyCore) RESTClient() rest.Interface { return c.rc }

// spdyMode is how the fake kubelet behaves on a port-forward's streams.
type spdyMode int

const (
	spdyServe           spdyMode = iota
	spdyCloseErrAndHang          // close the error stream at once (empty), never answer on data
	spdyNeverAnswer              // keep the error stream open, never answer on data
	spdyForbid                   // the API server refuses the port-forward: 403 with a Status
)

// spdyAPI is a fake API server that answers port-forwards (SPDY only;
// WebSocket upgrades refused with 400) to pods by name, each served by an http.Handler.
type spdyAPI struct {
	srv      *httptest.Server
	mu       sync.Mutex
	handlers map[string]http.Handler // pod name -> program
	modes    map[string]spdyMode
}

func newSPDYAPI(t *testing.T) *spdyAPI {
	s := &spdyAPI{handlers: map[string]http.Handler{}, modes: map[string]spdyMode{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *spdyAPI) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// api v1 namespaces NS pods NAME portforward
	if len(parts) != 7 || parts[6] != "portforward" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	name := parts[5]
	s.mu.Lock()
	h, mode := s.handlers[name], s.modes[name]
	s.mu.Unlock()
	if mode == spdyForbid {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"` + name + `\" is forbidden","reason":"Forbidden","details":{"name":"` + name + `","kind":"pods"},"code":403}`))
		return
	}
	if r.Method == http.MethodGet {
		http.Error(w, "no websockets here", http.StatusBadRequest)
		return
	}
	if h == nil {
		http.Error(w, "no such pod", http.StatusNotFound)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		streams <- st
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	for {
		select {
		case st := <-streams:
			switch st.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				if mode == spdyCloseErrAndHang {
					st.Close()
				}
				// otherwise: kept open, never written
			case corev1.StreamTypeData:
				if mode == spdyCloseErrAndHang || mode == spdyNeverAnswer {
					continue // never answered
				}
				go func() {
					defer st.Close()
					req, err := http.ReadRequest(bufio.NewReader(st))
					if err != nil {
						return
					}
					w := &streamingWriter{w: st, h: http.Header{}}
					h.ServeHTTP(w, req)
					w.Flush()
				}()
			}
		case <-conn.CloseChan():
			return
		case <-time.After(60 * time.Second):
			return
		}
	}
}

// program registers the program pod name served by h.
func (s *spdyAPI) program(name string, mode spdyMode, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[name], s.modes[name] = h, mode
}

// cluster is a cluster of the fake objects objs, whose port-forwards reach s.
func (s *spdyAPI) cluster(t *testing.T, timeout time.Duration, objs ...runtime.Object) *cluster {
	cfg := &rest.Config{Host: s.srv.URL}
	real, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{config: cfg, cs: spdyHybrid{fake.NewSimpleClientset(objs...), real}, timeout: timeout}
}

// spdyProgramPod is a Running pod of a program's chart.
func spdyProgramPod(chart, name, node string, phase corev1.PodPhase, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "podsweeper", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "r"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "p", Args: args}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// spdyPod is a workload pod.
func spdyPod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// spdyJSON is a program answering its status page with pus (JSON text)
// and 404 on the dry run page (or dry, when not "").
func spdyJSON(pus, dry string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/podsweeper":
			w.Write([]byte(pus))
		case "/debug/podsweeper/dry-run":
			if dry == "" {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte(dry))
		default:
			http.NotFound(w, r)
		}
	})
}

// streamingWriter is an http.ResponseWriter that writes the response to w as
// it is made, as a program's server does: its header at the first Write or
// Flush, then each Write; the body ends when the stream closes.
type streamingWriter struct {
	w       io.Writer
	h       http.Header
	code    int
	started bool
}

func (s *streamingWriter) Header() http.Header { return s.h }
func (s *streamingWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}

func (s *streamingWriter) start() {
	if s.started {
		return
	}
	s.started = true
	if s.code == 0 {
		s.code = http.StatusOK
	}
	fmt.Fprintf(s.w, "HTTP/1.1 %d %s\r\nConnection: close\r\n", s.code, http.StatusText(s.code))
	_ = s.h.Write(s.w)
	io.WriteString(s.w, "\r\n")
}

func (s *streamingWriter) Write(b []byte) (int, error) {
	s.start()
	return s.w.Write(b)
}

func (s *streamingWriter) Flush() { s.start() }
