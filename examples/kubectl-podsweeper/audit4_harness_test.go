package main

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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream"
	spdystream "k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// a4Cluster is a fake API server: REST reads from a fake clientset, and
// pods/portforward (SPDY) to the programs' handlers, by namespace/name.
type a4Cluster struct {
	t   *testing.T
	cs  *fake.Clientset
	srv *httptest.Server
	mu  sync.Mutex
	h   map[string]http.Handler
}

type a4CS struct {
	*fake.Clientset
	rc rest.Interface
}

func (c a4CS) CoreV1() typedcorev1.CoreV1Interface { return a4Core{c.Clientset.CoreV1(), c.rc} }

type a4Core struct {
	typedcorev1.CoreV1Interface
	rc rest.Interface
}

func (c a4Core) RESTClient() rest.Interface { return c.rc }

func newA4(t *testing.T, objs ...k8sruntime.Object) *a4Cluster {
	c := &a4Cluster{t: t, cs: fake.NewClientset(objs...), h: map[string]http.Handler{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *a4Cluster) handle(ns, name string, h http.Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.h[ns+"/"+name] = h
}

func (c *a4Cluster) serve(w http.ResponseWriter, r *http.Request) {
	// /api/v1/namespaces/NS/pods/NAME/portforward
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 7 || parts[5] == "" || parts[6] != "portforward" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost { // WebSockets: not taken, fall back to SPDY
		http.Error(w, "websockets not taken", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	h := c.h[parts[3]+"/"+parts[5]]
	c.mu.Unlock()
	if h == nil {
		http.Error(w, "error dialing backend: no such pod", http.StatusInternalServerError)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	conn := spdystream.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		go func() { <-replySent; streams <- s }()
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	for {
		select {
		case s := <-streams:
			go a4Stream(s, h)
		case <-conn.CloseChan():
			return
		}
	}
}

func a4Stream(s httpstream.Stream, h http.Handler) {
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
	res := rec.Result()
	res.Close = true
	_ = res.Write(s)
	_ = s.Close()
}

func (c *a4Cluster) cluster(ns string) *cluster {
	cfg := &rest.Config{Host: c.srv.URL, Timeout: 0}
	rcfg := rest.CopyConfig(cfg)
	rcfg.APIPath = "/api"
	rcfg.GroupVersion = &schema.GroupVersion{Version: "v1"}
	rcfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(rcfg)
	if err != nil {
		c.t.Fatal(err)
	}
	var cs kubernetes.Interface = a4CS{c.cs, rc}
	return &cluster{config: cfg, cs: cs, namespace: ns, timeout: 5 * time.Second}
}

// a4Prog is a program's pod of chart, on node.
func a4Prog(chart, ns, name, node string, args ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "r"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Args: args}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func a4Pod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// a4Page is a program's status listener: its PUs, and its dry run's
// report when reports is not nil; at is its clock.
type a4Page struct {
	mu      sync.Mutex
	at      time.Time
	pus     []k8s.PUStatus
	reports *struct {
		Total   int                `json:"total"`
		Reports []k8s.WouldDestroy `json:"reports"`
	}
	status  int // 0: 200
	onAsked func()
}

func (p *a4Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onAsked != nil && r.URL.Path == k8s.StatusPath {
		p.onAsked()
	}
	if !p.at.IsZero() {
		w.Header().Set(k8s.TimeHeader, p.at.Format(time.RFC3339Nano))
	}
	switch r.URL.Path {
	case k8s.StatusPath:
		if p.status != 0 {
			http.Error(w, "not yet", p.status)
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
		_ = json.NewEncoder(w).Encode(p.reports)
	default:
		http.NotFound(w, r)
	}
}

func a4Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
