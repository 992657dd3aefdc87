package contracts_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

const node = "node-a"

func key(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }

func pod(n, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node}}
}

// world is a tiny API server: pods by key, and sandboxes by key.
type world struct {
	mu         sync.Mutex
	pods       map[types.NamespacedName]*corev1.Pod
	sandbox    map[types.NamespacedName]string
	getErr     map[types.NamespacedName]error
	destroys   []ports.DestroyEvent
	destroyAt  []time.Time
	destroyErr func(ev ports.DestroyEvent) error
}

func newWorld() *world {
	return &world{pods: map[types.NamespacedName]*corev1.Pod{}, sandbox: map[types.NamespacedName]string{},
		getErr: map[types.NamespacedName]error{}}
}

func (w *world) add(n, uid, sb string) ports.PU {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods[key(n)] = pod(n, uid)
	w.sandbox[key(n)] = sb
	return ports.PU{PUID: uid, Pod: key(n), SandboxID: sb}
}

func (w *world) del(n string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, key(n))
	delete(w.sandbox, key(n))
}

func (w *world) setSandbox(n, sb string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sandbox[key(n)] = sb
}

func (w *world) failGet(n string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		delete(w.getErr, key(n))
	} else {
		w.getErr[key(n)] = err
	}
}

func (w *world) getter() ports.PodGetter {
	return ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := w.getErr[k]; err != nil {
			return nil, err
		}
		if p, ok := w.pods[k]; ok {
			return p.DeepCopy(), nil
		}
		return nil, fmt.Errorf("%s: %w", k, ports.ErrPodNotFound)
	})
}

func (w *world) extractor() ports.SandboxExtractor {
	return ports.SandboxExtractorFunc(func(_ context.Context, p *corev1.Pod) (string, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.sandbox[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}], nil
	})
}

func (w *world) policy() ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		w.mu.Lock()
		f := w.destroyErr
		w.destroys = append(w.destroys, ev)
		w.destroyAt = append(w.destroyAt, time.Now())
		w.mu.Unlock()
		if f != nil {
			return f(ev)
		}
		return nil
	})
}

func (w *world) destroyed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, ev := range w.destroys {
		out = append(out, ev.PUID)
	}
	return out
}

func (w *world) times() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.destroyAt...)
}

func newEngine(t *testing.T, w *world, o deletion.Options) *deletion.Engine {
	t.Helper()
	if o.NodeName == "" {
		o.NodeName = node
	}
	return deletiontest.NewEngine(t, w.getter(), w.policy(), o)
}

func advance(d time.Duration) { deletiontest.Advance(d) }

var _ = ports.Permanent

func discard() logr.Logger { return deletiontest.Discard() }

type podGetterFunc = ports.PodGetterFunc

func rateLimit(r float64) rate.Limit { return rate.Limit(r) }
