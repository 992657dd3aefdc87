package main

// The auditor's harness: a fake API server that answers pods/portforward
// over SPDY (the WebSocket upgrade refused, so the plugin falls back as it
// does against an older API server), whose streams reach an http.Handler per
// program pod; and a fake clientset for the rest of the API, whose
// CoreV1().RESTClient() points at the fake server.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/streaming/pkg/httpstream"
	spdystream "k8s.io/streaming/pkg/httpstream/spdy"
)

type audCS struct {
	*fake.Clientset
	rc rest.Interface
}

func (c audCS) CoreV1() corev1client.CoreV1Interface {
	return audCore{c.Clientset.CoreV1(), c.rc}
}

type audCore struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c audCore) RESTClient() rest.Interface { return c.rc }

var _ kubernetes.Interface = audCS{}

// audEnv is a cluster: programs' handlers by pod name.
type audEnv struct {
	mu       sync.Mutex
	handlers map[string]http.Handler   // "namespace/name" -> the program's listener
	refuse   map[string]*metav1.Status // "namespace/name" -> the API server's refusal of its port-forward
	hang     map[string]bool           // "namespace/name" -> its streams are never acknowledged
	// wsForbidden: the WebSocket's upgrade (verb get) is refused 403, as
	// for a user who may create pods/portforward but not get it.
	wsForbidden bool
	srv         *httptest.Server
	fake        *fake.Clientset
	c           *cluster
}

func newAudEnv(t *testing.T, objs ...runtime.Object) *audEnv {
	t.Helper()
	e := &audEnv{handlers: map[string]http.Handler{}, refuse: map[string]*metav1.Status{}, hang: map[string]bool{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	e.fake = fake.NewClientset(objs...)
	// Field selectors on Events, as the API server applies them.
	e.fake.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		la := a.(k8stesting.ListAction)
		sel := la.GetListRestrictions().Fields
		obj, err := e.fake.Tracker().List(corev1.SchemeGroupVersion.WithResource("events"), corev1.SchemeGroupVersion.WithKind("Event"), la.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		l := obj.(*corev1.EventList)
		var out []corev1.Event
		for _, ev := range l.Items {
			set := fields.Set{"involvedObject.kind": ev.InvolvedObject.Kind, "involvedObject.name": ev.InvolvedObject.Name,
				"involvedObject.uid": string(ev.InvolvedObject.UID), "involvedObject.namespace": ev.InvolvedObject.Namespace, "reason": ev.Reason}
			if sel == nil || sel.Matches(set) {
				out = append(out, ev)
			}
		}
		l.Items = out
		return true, l, nil
	})
	cfg := &rest.Config{Host: e.srv.URL}
	rcfg := rest.CopyConfig(cfg)
	rcfg.GroupVersion = &corev1.SchemeGroupVersion
	rcfg.APIPath = "/api"
	rcfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	e.c = &cluster{config: cfg, cs: audCS{e.fake, rc}, timeout: 10 * time.Second}
	return e
}

func (e *audEnv) handle(nsName string, h http.Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handlers[nsName] = h
}

// serve answers a port-forward: the WebSocket upgrade refused (400), the
// SPDY one taken.
func (e *audEnv) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// api v1 namespaces NS pods NAME portforward
	if len(parts) != 7 || parts[6] != "portforward" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	e.mu.Lock()
	h := e.handlers[parts[3]+"/"+parts[5]]
	st := e.refuse[parts[3]+"/"+parts[5]]
	hang := e.hang[parts[3]+"/"+parts[5]]
	e.mu.Unlock()
	if st != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(st.Code))
		_ = json.NewEncoder(w).Encode(st)
		return
	}
	if h == nil {
		http.Error(w, "no such pod", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodGet {
		e.mu.Lock()
		forbidden := e.wsForbidden
		e.mu.Unlock()
		if forbidden {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(audForbidden(`pods "x" is forbidden: cannot get resource "pods/portforward"`))
			return
		}
		http.Error(w, "websockets not served here", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	stop := make(chan struct{})
	defer close(stop)
	conn := spdystream.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		if hang {
			<-stop
		}
		streams <- s
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	for {
		select {
		case s := <-streams:
			switch s.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				_ = s.Close()
			case corev1.StreamTypeData:
				go audServeStream(s, h)
			}
		case <-conn.CloseChan():
			return
		}
	}
}

func audServeStream(s httpstream.Stream, h http.Handler) {
	defer s.Close()
	req, err := http.ReadRequest(bufio.NewReader(s))
	if err != nil {
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	resp := &http.Response{StatusCode: rec.Code, ProtoMajor: 1, ProtoMinor: 1, Header: rec.Header(),
		Body: ioNopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	_ = resp.Write(s)
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func ioNopCloser(r *bytes.Reader) nopCloser { return nopCloser{r} }

// audProgramPod is a Running pod of a program's chart.
func audProgramPod(prog, ns, name, node string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": "podsweeper-" + prog, "app.kubernetes.io/instance": prog}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: prog, Args: args}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
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

var _ = context.Background

// apierrorsStatus is a StatusError built from a Status.
type apierrorsStatus struct{ st metav1.Status }

func (e *apierrorsStatus) Error() string         { return e.st.Message }
func (e *apierrorsStatus) Status() metav1.Status { return e.st }
