package deletion_test

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func key4(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func pu4(name string) ports.PU { return ports.PU{PUID: "uid-" + name, Pod: key4(name)} }

func livePod4(p ports.PU) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Pod.Namespace, Name: p.Pod.Name, UID: types.UID(p.PUID)},
		Spec: corev1.PodSpec{NodeName: "node-a"}}
}

// recorder4 is an Observer recording events, safe for goroutines.
type recorder4 struct {
	mu  sync.Mutex
	evs []deletion.Event
}

func (r *recorder4) Observe(ev deletion.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorder4) kinds(puid string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		if ev.PU.PUID == puid {
			out = append(out, ev.Kind.String())
		}
	}
	return out
}
