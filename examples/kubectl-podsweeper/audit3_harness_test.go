package main

// The third audit's harness, on the fake API server of forwardapi_test.go:
// the WebSocket upgrade refused (400) before anything else, each program
// pod's answers streamed as its handler writes them.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// a3API is the fake API server.
type a3API struct {
	*forwardServer // its handlers by namespace/name of a program pod
	t              *testing.T
	fake           *fake.Clientset
	// onForward runs at each port-forward's upgrade, before it is answered.
	onForward func(namespace, name string)
	forwards  []string
	// refuse answers the SPDY upgrade of these pods (namespace/name) 403.
	refuse map[string]bool
	// noListener: nothing listens on these pods' ports (the kubelet says so on the error stream).
	noListener map[string]bool
}

func newA3API(t *testing.T, objs ...runtime.Object) *a3API {
	t.Helper()
	a := &a3API{t: t}
	a.fake = fake.NewClientset(objs...)
	selectEvents(a.fake)
	a.forwardServer = newForwardServer(t, 0, a.upgrade)
	return a
}

func (a *a3API) cluster(timeout time.Duration) *cluster {
	return a.hybridCluster(a.t, a.fake, timeout)
}

func (a *a3API) handle(namespace, name string, h http.Handler) { a.setHandler(namespace+"/"+name, h) }

func (a *a3API) upgrade(w http.ResponseWriter, r *http.Request, namespace, name string) *podStreams {
	if isWebSocket(r) {
		http.Error(w, "no websockets here", http.StatusBadRequest) // the client falls back to SPDY
		return nil
	}
	key := namespace + "/" + name
	a.mu.Lock()
	a.forwards = append(a.forwards, key)
	on, h, refused, none := a.onForward, a.handlers[key], a.refuse[key], a.noListener[key]
	a.mu.Unlock()
	if refused {
		writeStatus(w, http.StatusForbidden, podsForbidden(name, `pods "`+name+`" is forbidden: User "sre" cannot create resource "pods/portforward"`))
		return nil
	}
	if on != nil {
		on(namespace, name)
	}
	switch {
	case h == nil:
		http.Error(w, "no such pod", http.StatusNotFound)
		return nil
	case none:
		return &podStreams{err: errRefused, data: dataDiscard}
	}
	return &podStreams{h: h, reply: replyStreaming}
}

// a3ProgPod is a program's pod, Running.
func a3ProgPod(chart, namespace, name, node string, args ...string) *corev1.Pod {
	return programPod(chart, "rel", "main", namespace, name, node, corev1.PodRunning, args...)
}

// a3Pod is a workload pod, Running (audPod).
var a3Pod = audPod

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
