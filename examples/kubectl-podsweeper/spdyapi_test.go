package main

// The promises' harness, on the fake API server of forwardapi_test.go: a
// fake clientset made with each cluster, each program pod's answers
// streamed as its handler writes them, and a fake kubelet whose streams
// can hang (spdyMode); a port-forward no stream comes on for a minute ends.

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

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
	*forwardServer // its handlers by pod name
	modes          map[string]spdyMode
}

func newSPDYAPI(t *testing.T) *spdyAPI {
	s := &spdyAPI{modes: map[string]spdyMode{}}
	s.forwardServer = newForwardServer(t, 60*time.Second, s.upgrade)
	return s
}

func (s *spdyAPI) upgrade(w http.ResponseWriter, r *http.Request, _, name string) *podStreams {
	s.mu.Lock()
	h, mode := s.handlers[name], s.modes[name]
	s.mu.Unlock()
	switch {
	case mode == spdyForbid: // the WebSocket's upgrade too
		writeStatus(w, http.StatusForbidden, podsForbidden(name, `pods "`+name+`" is forbidden`))
	case isWebSocket(r):
		http.Error(w, "no websockets here", http.StatusBadRequest)
	case h == nil:
		http.Error(w, "no such pod", http.StatusNotFound)
	case mode == spdyCloseErrAndHang:
		return &podStreams{err: errClose, data: dataIgnore}
	case mode == spdyNeverAnswer:
		return &podStreams{err: errOpen, data: dataIgnore}
	default:
		return &podStreams{h: h, reply: replyStreaming, err: errOpen}
	}
	return nil
}

// program registers the program pod name served by h.
func (s *spdyAPI) program(name string, mode spdyMode, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[name], s.modes[name] = h, mode
}

// cluster is a cluster of the fake objects objs, whose port-forwards reach s.
func (s *spdyAPI) cluster(t *testing.T, timeout time.Duration, objs ...runtime.Object) *cluster {
	return s.hybridCluster(t, fake.NewSimpleClientset(objs...), timeout)
}

// spdyProgramPod is a Running pod of a program's chart.
func spdyProgramPod(chart, name, node string, phase corev1.PodPhase, args ...string) *corev1.Pod {
	return programPod(chart, "r", "p", "podsweeper", name, node, phase, args...)
}

// spdyPod is a workload pod, Running (audPod).
var spdyPod = audPod

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
