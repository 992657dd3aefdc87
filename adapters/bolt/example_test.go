package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// The journal is the engine's Inventory and (first among its Observers) a
// record of every PU it tracks: the next engine on the same file, after a
// restart of the agent, tracks them again.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "journal-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "journal.db") // a node agent: /var/lib/podsweeper/journal.db

	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		return nil, ports.ErrPodNotFound
	})
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		fmt.Println("destroy", ev.PUID, ev.Reason)
		return nil
	})

	// The agent's first run: it tracks a PU, and dies.
	journal, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		panic(err) // not a journal, or another agent holds it
	}
	engine, err := deletion.New(getter, policy, deletion.Options{
		Inventory: journal,
		Observer:  journal, // beside metrics: deletion.Observers(journal, metrics)
	})
	if err != nil {
		panic(err)
	}
	if err := engine.Track(ports.PU{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "default", Name: "web"}, SandboxID: "sb-1"}); err != nil {
		panic(err)
	}
	// uid-1 is on disk now.
	_ = journal.Close()

	// The next run: the pod was deleted while the agent was down. Start
	// lists the journal and tracks uid-1 again; its check destroys it, and
	// the journal forgets it.
	journal, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		panic(err)
	}
	defer journal.Close()
	restored := make(chan int, 1)
	engine, err = deletion.New(getter, policy, deletion.Options{
		Inventory: journal,
		Observer: deletion.Observers(journal, deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventRestored {
				restored <- ev.Count
			}
		})),
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Start(ctx) }()
	fmt.Println("restored", <-restored)
	engine.Sweep(ctx) // or wait: every PU is checked within SweepInterval
	stop()
	<-done
	pus, err := journal.ListPUs(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("in the journal:", pus)
	// Output:
	// restored 1
	// destroy uid-1 PodGone
	// in the journal: []
}
