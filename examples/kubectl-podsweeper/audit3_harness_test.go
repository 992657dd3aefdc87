package main

// A fake API server of my own for the third audit: REST reads from a fake
// clientset, pods/portforward over SPDY from an httptest server that serves
// each program pod's pages from an http.Handler.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

type a3Clientset struct {
	*fake.Clientset
	rc rest.Interface
}

func (c *a3Clientset) CoreV1() typedcorev1.CoreV1Interface {
	return &a3Core{CoreV1Interface: c.Clientset.CoreV1(), rc: c.rc}
}

type a3Core struct {
	typedcorev1.CoreV1Interface
	rc rest.Interface
}

func (c *a3Core) RESTClient() rest.Interface { return c.rc }

// a3API is the fake API server.
type a3API struct {
	t        *testing.T
	srv      *httptest.Server
	fake     *fake.Clientset
	mu       sync.Mutex
	handlers map[string]http.Handler // namespace/name of a program pod
	// onForward runs at each port-forward's upgrade, before it is answered.
	onForward func(namespace, name string)
	forwards  []string
	// refuse answers the SPDY upgrade of these pods (namespace/name) 403.
	refuse map[string]bool
	// noListener: nothing listens on these pods' ports (the kubelet says so on the error stream).
	noListener map[string]bool
}

var a3ForwardPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/portforward$`)

func newA3API(t *testing.T, objs ...runtime.Object) *a3API {
	t.Helper()
	a := &a3API{t: t, handlers: map[string]http.Handler{}}
	a.fake = fake.NewClientset(objs...)
	// Field selectors of Events, as the API server applies them.
	a.fake.PrependReactor("list", "events", func(action k8stesting.Action) (bool, runtime.Object, error) {
		la := action.(k8stesting.ListAction)
		sel := la.GetListRestrictions().Fields
		obj, err := a.fake.Tracker().List(schema.GroupVersionResource{Version: "v1", Resource: "events"},
			schema.GroupVersionKind{Version: "v1", Kind: "Event"}, la.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		out := &corev1.EventList{}
		for _, e := range obj.(*corev1.EventList).Items {
			set := fields.Set{"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.name": e.InvolvedObject.Name,
				"involvedObject.uid": string(e.InvolvedObject.UID), "involvedObject.namespace": e.InvolvedObject.Namespace,
				"reason": e.Reason}
			if sel == nil || sel.Matches(set) {
				out.Items = append(out.Items, e)
			}
		}
		return true, out, nil
	})
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *a3API) config() *rest.Config { return &rest.Config{Host: a.srv.URL} }

func (a *a3API) cluster(timeout time.Duration) *cluster {
	cfg := a.config()
	real, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	return &cluster{config: cfg, cs: &a3Clientset{Clientset: a.fake, rc: real.CoreV1().RESTClient()}, timeout: timeout}
}

func (a *a3API) handle(namespace, name string, h http.Handler) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handlers[namespace+"/"+name] = h
}

func (a *a3API) serve(w http.ResponseWriter, r *http.Request) {
	m := a3ForwardPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, "not served by this fake: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "no websockets here", http.StatusBadRequest) // the client falls back to SPDY
		return
	}
	a.mu.Lock()
	a.forwards = append(a.forwards, m[1]+"/"+m[2])
	on := a.onForward
	h := a.handlers[m[1]+"/"+m[2]]
	refused := a.refuse[m[1]+"/"+m[2]]
	none := a.noListener[m[1]+"/"+m[2]]
	a.mu.Unlock()
	if refused {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
			Reason: metav1.StatusReasonForbidden, Code: 403, Message: "pods \"" + m[2] + "\" is forbidden: User \"sre\" cannot create resource \"pods/portforward\"",
			Details: &metav1.StatusDetails{Name: m[2], Kind: "pods"}})
		return
	}
	if on != nil {
		on(m[1], m[2])
	}
	if h == nil {
		http.Error(w, "no such pod", http.StatusNotFound)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
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
			if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
				if none {
					_, _ = fmt.Fprintf(s, "error forwarding port %s to pod %s, uid : failed to execute portforward in network namespace: failed to connect to localhost:%s inside namespace: dial tcp 127.0.0.1:%s: connect: connection refused",
						s.Headers().Get(corev1.PortHeader), m[2], s.Headers().Get(corev1.PortHeader), s.Headers().Get(corev1.PortHeader))
				}
				_ = s.Close() // nothing (else) to say: the answer comes on the data stream
				continue
			}
			if none {
				go func() { _, _ = io.Copy(io.Discard, s); _ = s.Close() }()
				continue
			}
			go a3ServeStream(s, h)
		case <-conn.CloseChan():
			return
		}
	}
}

// a3ServeStream reads one HTTP request from s and answers it with h.
func a3ServeStream(s httpstream.Stream, h http.Handler) {
	defer s.Close()
	req, err := http.ReadRequest(bufio.NewReader(s))
	if err != nil {
		return
	}
	rw := &a3RW{w: s, h: http.Header{}}
	h.ServeHTTP(rw, req)
	if !rw.wrote {
		rw.WriteHeader(http.StatusOK)
	}
}

// a3RW writes an HTTP/1.1 response straight onto a stream, its body until
// the stream closes.
type a3RW struct {
	w     io.Writer
	h     http.Header
	wrote bool
}

func (r *a3RW) Header() http.Header { return r.h }
func (r *a3RW) WriteHeader(code int) {
	if r.wrote {
		return
	}
	r.wrote = true
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	r.h.Set("Connection", "close")
	_ = r.h.Write(&b)
	b.WriteString("\r\n")
	_, _ = r.w.Write(b.Bytes())
}
func (r *a3RW) Write(p []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.w.Write(p)
}

// a3ProgPod is a program's pod, Running.
func a3ProgPod(chart, namespace, name, node string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "rel"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Args: args}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// a3Pod is a workload pod.
func a3Pod(namespace, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// a3Program serves a program's pages: its status page (pus), its dry run's
// report (dry, nil: 404), cni-gc's address page (addr by ip), each with the
// TimeHeader at (zero: none).
type a3Program struct {
	mu          sync.Mutex
	at          time.Time
	pus         []k8s.PUStatus
	statusCode  int
	statusBody  string
	dry         *a3Dry
	addr        map[string]*AddressStatus
	delayStatus time.Duration
	onStatus    func()
	onDry       func()
}

type a3Dry struct {
	Total   int                `json:"total"`
	Reports []k8s.WouldDestroy `json:"reports"`
}

func (p *a3Program) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	at, pus, code, body, dry, delay, onStatus, onDry := p.at, p.pus, p.statusCode, p.statusBody, p.dry, p.delayStatus, p.onStatus, p.onDry
	p.mu.Unlock()
	if !at.IsZero() {
		w.Header().Set(k8s.TimeHeader, at.UTC().Format(time.RFC3339Nano))
	}
	switch r.URL.Path {
	case k8s.StatusPath:
		if onStatus != nil {
			onStatus()
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		if code != 0 {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
			return
		}
		if pus == nil {
			pus = []k8s.PUStatus{}
		}
		_ = json.NewEncoder(w).Encode(pus)
	case k8s.DryRunPath:
		if onDry != nil {
			onDry()
		}
		if dry == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(dry)
	case addressPath:
		st := p.addr[r.URL.Query().Get("ip")]
		if st == nil {
			st = &AddressStatus{IP: r.URL.Query().Get("ip")}
		}
		_ = json.NewEncoder(w).Encode(st)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func a3Render(t *testing.T, x *PodExplanation) string {
	t.Helper()
	var b bytes.Buffer
	if err := RenderPod(&b, x); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func a3Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func a3Time(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}
