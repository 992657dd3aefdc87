package main

// The fourth audit's harness, on the fake API server of forwardapi_test.go:
// a pod without a handler answered 500 as when the kubelet cannot be
// dialed; each stream served once acknowledged, each answer whole, up to
// the stream's close. Its fake clientset applies no field selector.

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// a4Cluster is a fake API server: REST reads from a fake clientset, and
// pods/portforward (SPDY) to the programs' handlers, by namespace/name.
type a4Cluster struct {
	*forwardServer // its handlers by namespace/name
	t              *testing.T
	cs             *fake.Clientset
}

func newA4(t *testing.T, objs ...k8sruntime.Object) *a4Cluster {
	c := &a4Cluster{t: t, cs: fake.NewClientset(objs...)}
	c.forwardServer = newForwardServer(t, 0, c.upgrade)
	return c
}

func (c *a4Cluster) handle(ns, name string, h http.Handler) { c.setHandler(ns+"/"+name, h) }

func (c *a4Cluster) upgrade(w http.ResponseWriter, r *http.Request, ns, name string) *podStreams {
	if isWebSocket(r) { // WebSockets: not taken, fall back to SPDY
		http.Error(w, "websockets not taken", http.StatusBadRequest)
		return nil
	}
	c.mu.Lock()
	h := c.handlers[ns+"/"+name]
	c.mu.Unlock()
	if h == nil {
		http.Error(w, "error dialing backend: no such pod", http.StatusInternalServerError)
		return nil
	}
	return &podStreams{h: h, reply: replyClose, afterReply: true}
}

// cluster is the plugin's cluster, its programs in namespace ns ("": every one).
func (c *a4Cluster) cluster(ns string) *cluster {
	cl := c.hybridCluster(c.t, c.cs, 5*time.Second)
	cl.namespace = ns
	return cl
}

// a4Prog is a program's pod of chart, on node.
func a4Prog(chart, ns, name, node string, args ...string) *corev1.Pod {
	return programPod(chart, "r", "c", ns, name, node, corev1.PodRunning, args...)
}

// a4Pod is a workload pod, Running (audPod).
var a4Pod = audPod

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
