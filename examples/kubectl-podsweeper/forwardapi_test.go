package main

// The fake API server of the port-forward harnesses (audEnv and a2API,
// a3API, a4Cluster, spdyAPI): it answers pods/portforward over SPDY, each
// pod's streams served by an http.Handler as the program's listener would,
// and a fake clientset answers the rest of the API, its CoreV1().RESTClient()
// a real one of this server for the port-forward's URL (hybridCS).
//
// What a harness decides for itself is in its upgrade function: which
// port-forwards are refused and how (the WebSocket's upgrade answered 400 so
// that the plugin falls back to SPDY, or 403; a pod without a handler 404 or
// 500), and for the others, how their streams are served (podStreams):
// answered whole with a Content-Length, whole up to the stream's close, or
// as written; an error stream closed at once, kept open, or telling that
// nothing listens; streams that hang. fakeAPI (fakeapi_test.go), the
// harness with a kubeconfig and RBAC reviews, is another server.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// hybridCS is the fake clientset for the API server's objects, with a real
// REST client (pointing at the fake server) for the port-forward's URL.
type hybridCS struct {
	*fake.Clientset
	rc rest.Interface
}

func (c hybridCS) CoreV1() corev1client.CoreV1Interface {
	return hybridCore{c.Clientset.CoreV1(), c.rc}
}

type hybridCore struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c hybridCore) RESTClient() rest.Interface { return c.rc }

var _ kubernetes.Interface = hybridCS{}

// programPod is a pod of a program: its chart's labels (name chart,
// instance), its container's name and args.
func programPod(chart, instance, container, ns, name, node string, phase corev1.PodPhase, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": instance}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: container, Args: args}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// selectEvents has f apply the field selectors of a list of Events, as the
// API server does (a fake clientset ignores them).
func selectEvents(f *fake.Clientset) {
	f.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		la := a.(k8stesting.ListAction)
		sel := la.GetListRestrictions().Fields
		obj, err := f.Tracker().List(corev1.SchemeGroupVersion.WithResource("events"), corev1.SchemeGroupVersion.WithKind("Event"), la.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		out := &corev1.EventList{}
		for _, ev := range obj.(*corev1.EventList).Items {
			set := fields.Set{"involvedObject.kind": ev.InvolvedObject.Kind, "involvedObject.name": ev.InvolvedObject.Name,
				"involvedObject.uid": string(ev.InvolvedObject.UID), "involvedObject.namespace": ev.InvolvedObject.Namespace, "reason": ev.Reason}
			if sel == nil || sel.Matches(set) {
				out.Items = append(out.Items, ev)
			}
		}
		return true, out, nil
	})
}

// forwardServer is the fake API server. upgrade decides each port-forward
// to namespace/name: it answers a refusal on w itself and returns nil, or
// returns how the pod's streams are served. idle, when not 0, ends a
// port-forward no stream has come on for that long.
type forwardServer struct {
	srv     *httptest.Server
	upgrade func(w http.ResponseWriter, r *http.Request, namespace, name string) *podStreams
	idle    time.Duration
	// mu guards handlers, and what a harness keeps beside them.
	mu       sync.Mutex
	handlers map[string]http.Handler // the programs' listeners, by the harness's key for a pod
}

func newForwardServer(t *testing.T, idle time.Duration, upgrade func(w http.ResponseWriter, r *http.Request, namespace, name string) *podStreams) *forwardServer {
	s := &forwardServer{upgrade: upgrade, idle: idle, handlers: map[string]http.Handler{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// hybridCluster is the plugin's cluster: the objects of f, the
// port-forwards to this server, each program asked within timeout.
func (s *forwardServer) hybridCluster(t *testing.T, f *fake.Clientset, timeout time.Duration) *cluster {
	t.Helper()
	cfg := &rest.Config{Host: s.srv.URL}
	real, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{config: cfg, cs: hybridCS{f, real.CoreV1().RESTClient()}, timeout: timeout}
}

// setHandler serves h as the listener of the pod of key.
func (s *forwardServer) setHandler(key string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[key] = h
}

// isWebSocket tells the WebSocket's upgrade (a GET, verb get) from SPDY's
// (a POST, verb create).
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// podsForbidden is the API server's refusal of a request on the pod name.
func podsForbidden(name, message string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusForbidden,
		Reason: metav1.StatusReasonForbidden, Message: message, Details: &metav1.StatusDetails{Name: name, Kind: "pods"}}
}

// writeStatus answers code with st, as the API server refuses.
func writeStatus(w http.ResponseWriter, code int, st *metav1.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

// podStreams is how the streams of a pod's port-forward are served.
type podStreams struct {
	h     http.Handler // the program's listener
	reply replyMode
	err   errStreamMode
	data  dataMode
	// hang: the streams are never acknowledged (until the port-forward ends).
	hang bool
	// afterReply: a stream is served once its acknowledgement is sent.
	afterReply bool
}

// replyMode is how an answer is written on its data stream.
type replyMode int

const (
	replyLength    replyMode = iota // whole, with a Content-Length
	replyClose                      // whole, up to the stream's close (Connection: close)
	replyStreaming                  // as the handler writes it (streamingWriter)
)

// errStreamMode is what the fake kubelet does with an error stream.
type errStreamMode int

const (
	errClose   errStreamMode = iota // closed at once, empty: the port is reached
	errOpen                         // kept open, never written
	errRefused                      // "connection refused", then closed: nothing listens on the port
)

// dataMode is what the fake kubelet does with a data stream.
type dataMode int

const (
	dataServe   dataMode = iota // the request read, the handler's answer written
	dataDiscard                 // read to its end and closed unanswered
	dataIgnore                  // never read, never answered
)

var forwardPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/portforward$`)

func (s *forwardServer) serve(w http.ResponseWriter, r *http.Request) {
	m := forwardPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, "not served by this fake: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	p := s.upgrade(w, r, m[1], m[2])
	if p == nil {
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	stop := make(chan struct{})
	defer close(stop)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		if p.hang {
			<-stop
		}
		if p.afterReply {
			go func() { <-replySent; streams <- st }()
			return nil
		}
		streams <- st
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	for {
		var idle <-chan time.Time
		if s.idle > 0 {
			idle = time.After(s.idle)
		}
		select {
		case st := <-streams:
			if st.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
				p.errorStream(st, m[2])
				continue
			}
			switch p.data {
			case dataServe:
				go p.answer(st)
			case dataDiscard:
				go func() { _, _ = io.Copy(io.Discard, st); _ = st.Close() }()
			}
		case <-conn.CloseChan():
			return
		case <-idle:
			return
		}
	}
}

func (p *podStreams) errorStream(st httpstream.Stream, name string) {
	switch p.err {
	case errRefused:
		port := st.Headers().Get(corev1.PortHeader)
		_, _ = fmt.Fprintf(st, "error forwarding port %s to pod %s, uid : failed to execute portforward in network namespace: failed to connect to localhost:%s inside namespace: dial tcp 127.0.0.1:%s: connect: connection refused",
			port, name, port, port)
		_ = st.Close()
	case errClose:
		_ = st.Close()
	}
}

// answer reads one HTTP request from st and answers it with p.h.
func (p *podStreams) answer(st httpstream.Stream) {
	defer st.Close()
	req, err := http.ReadRequest(bufio.NewReader(st))
	if err != nil {
		return
	}
	if p.reply == replyStreaming {
		w := &streamingWriter{w: st, h: http.Header{}}
		p.h.ServeHTTP(w, req)
		w.Flush()
		return
	}
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, req)
	res := rec.Result()
	if p.reply == replyClose {
		res.Close = true
	} else {
		res.ContentLength = int64(rec.Body.Len())
		res.Header.Set("Content-Length", strconv.Itoa(rec.Body.Len()))
	}
	_ = res.Write(st)
}

// forwardStreams answers r, a port-forward over SPDY, as the kubelet does
// through the API server: each data stream is served by serve, in a
// goroutine of its own, with the error stream of its request (nil when
// none came before it), until the connection closes.
func forwardStreams(w http.ResponseWriter, r *http.Request, serve func(data, errs httpstream.Stream)) {
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		streams <- s
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	errStreams := map[string]httpstream.Stream{}
	for {
		select {
		case <-conn.CloseChan():
			return
		case s := <-streams:
			id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
			switch s.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				errStreams[id] = s
			case corev1.StreamTypeData:
				go serve(s, errStreams[id])
			}
		}
	}
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
	_, _ = fmt.Fprintf(s.w, "HTTP/1.1 %d %s\r\nConnection: close\r\n", s.code, http.StatusText(s.code))
	_ = s.h.Write(s.w)
	_, _ = io.WriteString(s.w, "\r\n")
}

func (s *streamingWriter) Write(b []byte) (int, error) {
	s.start()
	return s.w.Write(b)
}

func (s *streamingWriter) Flush() { s.start() }
