package main

// Fakes of the tests of a cluster changing while asked: pages of fake programs served through fakeAPI
// (fakeapi_test.go), and a few helpers.

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// pagesOf is a program's listener: its status page, its dry run's report
// (nil: 404) and cni-gc's address page (nil: 404); onStatus runs when the
// status page is asked, before it answers.
type pagesOf struct {
	mu         sync.Mutex
	pus        []k8s.PUStatus
	dry        any
	address    any
	engine     string
	onStatus   func()
	statusCode int
}

func (p *pagesOf) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	pus, dry, addr, engine, on, code := p.pus, p.dry, p.address, p.engine, p.onStatus, p.statusCode
	p.mu.Unlock()
	w.Header().Set(k8s.TimeHeader, time.Now().UTC().Format(time.RFC3339Nano))
	switch r.URL.Path {
	case k8s.StatusPath:
		if on != nil {
			on()
		}
		if engine != "" {
			w.Header().Set(k8s.EngineHeader, engine)
		}
		if code != 0 {
			http.Error(w, "not ready", code)
			return
		}
		if pus == nil {
			pus = []k8s.PUStatus{}
		}
		_ = json.NewEncoder(w).Encode(pus)
	case k8s.DryRunPath:
		if dry == nil {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(dry)
	case addressPath:
		if addr == nil {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(addr)
	default:
		http.NotFound(w, r)
	}
}

// appPodOn is a Running pod of the apps on node.
func appPodOn(ns, name, uid, node string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// setPods replaces the fake's pods that are not programs' with ps (the programs' stay).
func (f *fakeAPI) setAppPods(ps ...corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keep []corev1.Pod
	for _, p := range f.pods {
		if p.Labels["app.kubernetes.io/name"] != "" {
			keep = append(keep, p)
		}
	}
	f.pods = append(keep, ps...)
}

func mustContain(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q", want)
	}
}
