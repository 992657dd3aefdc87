package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "custom-adapter:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "podsweeper-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	state := &StateFiles{Dir: dir}

	// A tiny in-memory API: the live pods by name. A real agent uses
	// adapters/k8s.NewPodGetter.
	var mu sync.Mutex
	live := map[types.NamespacedName]*corev1.Pod{}
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := live[key]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("pod %s: %w", key, ports.ErrPodNotFound)
	})

	// The state files keep the sandbox the engine records for a PU tracked
	// without one (a real agent gives a SandboxExtractor, adapters/cri's):
	// they are the Observer too.
	engine, err := deletion.New(getter, state, deletion.Options{Observer: state})
	if err != nil {
		return err
	}
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		key := types.NamespacedName{Namespace: "default", Name: name}
		uid := "uid-" + name
		live[key] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(uid)}}
		pu := ports.PU{PUID: uid, Pod: key}
		if err := state.Create(pu, []byte("firewall set of "+name+"\n")); err != nil {
			return err
		}
		if err := engine.Track(pu); err != nil {
			return err
		}
	}
	fmt.Println("state files:", list(dir))

	mu.Lock()
	delete(live, types.NamespacedName{Namespace: "default", Name: "web-1"})
	mu.Unlock()
	fmt.Println("pod default/web-1 deleted")

	engine.Sweep(ctx) // a real agent runs engine.Start(ctx) instead
	fmt.Println("state files:", list(dir))
	if got, want := list(dir), []string{"uid-web-0.state", "uid-web-2.state"}; !slices.Equal(got, want) {
		return fmt.Errorf("state files %v, want %v", got, want)
	}

	// The agent restarts; web-2 is deleted while it is down. The new engine
	// knows nothing, but the state files say which PUs exist: given as the
	// Inventory, they are tracked again when it starts, and checked.
	mu.Lock()
	delete(live, types.NamespacedName{Namespace: "default", Name: "web-2"})
	mu.Unlock()
	fmt.Println("agent restarted; pod default/web-2 deleted while it was down")
	restored := make(chan int, 1)
	engine, err = deletion.New(getter, state, deletion.Options{
		Inventory: state,
		Observer: deletion.Observers(state, deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventRestored {
				restored <- ev.Count
			}
		})),
	})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- engine.Start(ctx) }()
	n := <-restored
	fmt.Println("PUs restored from the state files:", n)
	engine.Sweep(ctx) // the periodic check would do it within 5s
	stop()
	if err := <-done; err != nil {
		return err
	}
	fmt.Println("state files:", list(dir))
	if got, want := list(dir), []string{"uid-web-0.state"}; !slices.Equal(got, want) {
		return fmt.Errorf("after the restart, state files %v, want %v", got, want)
	}
	return nil
}

func list(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.state"))
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	slices.Sort(m)
	return m
}
