package contracts_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// ports.PodGetter: "The pod may be shared, a cache's own object read without a deep copy: the engine never modifies
// it ..., and gives the Requeuer a deep copy." The Requeuer scribbles on its copy.
func TestHoldsSharedPodNeverModified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := pod("a", "uid-a")
		shared.Labels = map[string]string{"app": "web"}
		frozen := shared.DeepCopy()
		g := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return shared, nil })
		var mu sync.Mutex
		sb := "s1"
		x := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			return sb, nil
		})
		rq := ports.RequeuerFunc(func(_ context.Context, p *corev1.Pod) error {
			if p == shared {
				t.Errorf("the Requeuer got the cache's own pod")
			}
			p.Labels["app"] = "changed"
			p.UID = "other"
			return nil
		})
		e := deletiontest.NewEngine(t, g, &deletiontest.Policy{}, deletion.Options{NodeName: node, SandboxExtractor: x,
			SandboxConfirmer: x, Requeuer: rq, Confirmer: g, SweepInterval: time.Second})
		_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a")})
		deletiontest.Start(t, e)
		advance(3 * time.Second)
		mu.Lock()
		sb = "s2"
		mu.Unlock()
		advance(3 * time.Second)
		if !reflect.DeepEqual(shared, frozen) {
			t.Fatalf("the shared pod was modified")
		}
	})
}
