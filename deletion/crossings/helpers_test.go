package crossings_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// logLines records every log line.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger(v int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: v})
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *logLines) count(sub string) int {
	n := 0
	for _, s := range l.all() {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func pu(name string) ports.PU { return ports.PU{PUID: "uid-" + name, Pod: key(name)} }

func podOf(p ports.PU, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Pod.Namespace, Name: p.Pod.Name, UID: types.UID(p.PUID)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// pods is a simple PodGetter whose answers a test sets per pod.
type pods struct {
	mu     sync.Mutex
	live   map[types.NamespacedName]*corev1.Pod
	answer func(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error)
	reads  map[types.NamespacedName]int
}

func newPods() *pods {
	return &pods{live: map[types.NamespacedName]*corev1.Pod{}, reads: map[types.NamespacedName]int{}}
}

func (p *pods) add(pu ports.PU) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live[pu.Pod] = podOf(pu, "node-a")
}

func (p *pods) GetPod(ctx context.Context, k types.NamespacedName) (*corev1.Pod, error) {
	p.mu.Lock()
	p.reads[k]++
	f := p.answer
	pod, ok := p.live[k]
	p.mu.Unlock()
	if f != nil {
		return f(ctx, k)
	}
	if !ok {
		return nil, fmt.Errorf("pod %s: %w", k, ports.ErrPodNotFound)
	}
	return pod.DeepCopy(), nil
}

type typesNN = types.NamespacedName
type podT = corev1.Pod

const node = "node-a"

type recorder struct {
	mu  sync.Mutex
	evs []deletion.Event
}

func (r *recorder) Observe(ev deletion.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}
