package k8s

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// FuzzWiringDestroysEachGonePodOnce is a model of the wiring between an
// informer and the engine: the informer's store moves on at once, its
// events reach the handler later, in order, and the engine's checks read
// the store. Any interleaving of pods created, deleted (an update with the
// deletion timestamp, then the delete), recreated under the same name,
// events delivered and sweeps must keep three promises: no PU of a pod the
// store holds is destroyed; no PU is destroyed twice; and once every event
// is delivered and a sweep has run, every PU of a gone pod is destroyed.
func FuzzWiringDestroysEachGonePodOnce(f *testing.F) {
	for _, seed := range []string{
		"cdsl",        // create, delete, sweep, then the late events
		"cccddrsllls", // recreated under the same name
		"clcdlsrlsll", // events delivered between
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, ops []byte) { runWiringModel(t, ops) })
}

// TestWiringModelOnRandomInterleavings runs the model on random
// interleavings, so that -short runs it beyond the seeds.
func TestWiringModelOnRandomInterleavings(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ops := make([]byte, 4+r.IntN(40))
		for i := range ops {
			ops[i] = "cdrls"[r.IntN(5)]
		}
		runWiringModel(t, ops)
		if t.Failed() {
			t.Fatalf("ops %q", ops)
		}
	}
}

func runWiringModel(t *testing.T, ops []byte) {
	t.Helper()
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	var mu sync.Mutex
	destroyed := map[types.UID]int{}
	get := ports.PodGetterFunc(func(_ context.Context, k types.NamespacedName) (*corev1.Pod, error) {
		obj, ok, err := store.GetByKey(k.Namespace + "/" + k.Name)
		if err != nil || !ok {
			return nil, errors.Join(err, ports.ErrPodNotFound)
		}
		return obj.(*corev1.Pod), nil
	})
	policy := ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		destroyed[types.UID(ev.PUID)]++
		if obj, ok, _ := store.GetByKey(ev.Pod.Namespace + "/" + ev.Pod.Name); ok && obj.(*corev1.Pod).UID == types.UID(ev.PUID) {
			t.Errorf("the PU of %s, which the store holds, destroyed (%s)", ev.PUID, ev.Reason)
		}
		return nil
	})
	c, err := deletion.New(get, policy, deletion.Options{NodeName: "node-a", SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h := &podHandler{engine: c, store: store}
	var events []func() // what the informer has yet to hand the handler, in order
	uids := 0
	names := []string{"web", "db"}
	tracked := map[types.UID]bool{}
	for i, op := range ops {
		name := names[i%len(names)]
		cur, held, _ := store.GetByKey("ns/" + name)
		switch kind(op) {
		case 0: // create, if the name is free
			if held {
				continue
			}
			uids++
			p := pod(name, fmt.Sprintf("u-%d", uids), "node-a", "", fmt.Sprint(uids))
			_ = store.Add(p)
			events = append(events, func() { h.OnAdd(p, false); tracked[p.UID] = true })
		case 1: // delete: the deletion timestamp, then the delete
			if !held {
				continue
			}
			old := cur.(*corev1.Pod)
			deleting := old.DeepCopy()
			deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(int64(i), 0)}
			_ = store.Delete(old)
			events = append(events, func() { h.OnUpdate(old, deleting) }, func() { h.OnDelete(deleting) })
		case 2: // recreated under the same name, the old one's delete and the new one's add
			if !held {
				continue
			}
			old := cur.(*corev1.Pod)
			uids++
			p := pod(name, fmt.Sprintf("u-%d", uids), "node-a", "", fmt.Sprint(uids))
			_ = store.Update(p)
			events = append(events, func() { h.OnDelete(old) }, func() { h.OnAdd(p, false); tracked[p.UID] = true })
		case 3: // the handler takes the next event
			if len(events) > 0 {
				events[0]()
				events = events[1:]
			}
		case 4:
			c.Sweep(context.Background())
		}
	}
	for _, ev := range events {
		ev()
	}
	c.Sweep(context.Background())
	mu.Lock()
	defer mu.Unlock()
	for uid, n := range destroyed {
		if n > 1 {
			t.Errorf("the PU of %s destroyed %d times", uid, n)
		}
	}
	for uid := range tracked {
		_, live := liveUIDs(store)[uid]
		if !live && destroyed[uid] != 1 && trackedOnce(c, uid) {
			t.Errorf("the PU of %s, whose pod is gone, is still tracked", uid)
		}
	}
}

// kind maps an input byte to an operation: c, d, r, l and s by name, any
// other byte by its value.
func kind(op byte) int {
	if i := strings.IndexByte("cdrls", op); i >= 0 {
		return i
	}
	return int(op % 5)
}

// liveUIDs returns the UIDs of the pods the store holds.
func liveUIDs(store toolscache.Store) map[types.UID]struct{} {
	out := map[types.UID]struct{}{}
	for _, obj := range store.List() {
		out[obj.(*corev1.Pod).UID] = struct{}{}
	}
	return out
}

// trackedOnce reports whether c still tracks the PU of uid.
func trackedOnce(c *deletion.Engine, uid types.UID) bool {
	for _, s := range c.Status() {
		if s.PUID == string(uid) {
			return true
		}
	}
	return false
}
