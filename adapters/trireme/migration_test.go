package trireme_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/adapters/bolt"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/adapters/trireme"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// heldPU stands for a PU as trireme's policy engine lists it.
type heldPU struct{ ID, Namespace, Name, SandboxID string }

// The snippets of docs/sdk/migrating-from-trireme.md, compiled with the
// SDK's current API (hack/docscheck keeps the two the same); not run: they
// need a manager and trireme-lib's policy engine.
var (
	_ = migrateWithMetrics
	_ = migrateWithInventory
	_ = migrateWithJournal
)

func migrateWithMetrics(mgr manager.Manager, nodeName string, destroy ports.PolicyHandler,
	sandboxExtractor func(context.Context, *corev1.Pod) (string, error), eventsCh chan event.GenericEvent) error {
	// docs:begin metrics
	metrics, err := k8s.NewMetrics(nil) // registers on the manager's /metrics
	if err != nil {
		return err
	}
	deleteController, err := trireme.NewDeleteControllerWithOptions(mgr.GetClient(), nodeName, destroy,
		trireme.NewSandboxExtractor(sandboxExtractor), eventsCh,
		deletion.Options{
			Observer:           metrics,
			Logger:             ctrl.Log.WithName("delete-controller"),
			MaxDestroyAttempts: 10,
		})
	// docs:end metrics
	_ = deleteController
	return err
}

func migrateWithInventory(mgr manager.Manager, nodeName string, destroy ports.PolicyHandler,
	sandboxExtractor func(context.Context, *corev1.Pod) (string, error), eventsCh chan event.GenericEvent,
	metrics *k8s.Metrics, listPolicyEnginePUs func(context.Context) ([]heldPU, error)) error {
	// docs:begin inventory
	inventory := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
		held, err := listPolicyEnginePUs(ctx) // your code: the PUs trireme still holds
		if err != nil {
			return nil, err // logged, and asked again with backoff
		}
		pus := make([]ports.PU, 0, len(held))
		for _, h := range held {
			pus = append(pus, ports.PU{PUID: h.ID, Pod: types.NamespacedName{Namespace: h.Namespace, Name: h.Name}, SandboxID: h.SandboxID})
		}
		return pus, nil
	})
	deleteController, err := trireme.NewDeleteControllerWithOptions(mgr.GetClient(), nodeName, destroy,
		trireme.NewSandboxExtractor(sandboxExtractor), eventsCh,
		deletion.Options{Inventory: inventory, Observer: metrics})
	// docs:end inventory
	_ = deleteController
	return err
}

func migrateWithJournal(mgr manager.Manager, nodeName string, destroy ports.PolicyHandler,
	sandboxExtractor func(context.Context, *corev1.Pod) (string, error), eventsCh chan event.GenericEvent, metrics *k8s.Metrics) error {
	// docs:begin journal
	journal, err := bolt.Open("/var/lib/podsweeper/journal.db", bolt.Options{})
	if err != nil {
		return err // not a journal, or another agent holds it: the file is left as it is
	}
	defer journal.Close()
	deleteController, err := trireme.NewDeleteControllerWithOptions(mgr.GetClient(), nodeName, destroy,
		trireme.NewSandboxExtractor(sandboxExtractor), eventsCh,
		deletion.Options{Inventory: journal, Observer: deletion.Observers(journal, metrics)})
	// docs:end journal
	_ = deleteController
	return err
}
