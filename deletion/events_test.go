package deletion_test

// What the Observer is told: each Event kind carries the fields its doc
// lists, and the others are zero.

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestAnAdoptedEventCarriesOnlyItsFields protects, from Event: "Which
// fields are set depends on Kind; the others are zero", with Verdict "the
// verdict of the check (EventChecked, EventVetoed, a check's
// EventAdopted)" and EventAdopted: "PU holds it". A check records a PU's
// first sandbox: its EventAdopted carries the PU and row 7's verdict, and
// nothing else.
func TestAnAdoptedEventCarriesOnlyItsFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := types.NamespacedName{Namespace: "ns", Name: "a"}
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return podAt(key, "a"), nil
		})
		extractor := ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return "s1", nil })
		var mu sync.Mutex
		var adopted []deletion.Event
		obs := deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventAdopted {
				mu.Lock()
				adopted = append(adopted, ev)
				mu.Unlock()
			}
		})
		c := deletiontest.NewEngine(t, getter, newDestroyLog(), deletion.Options{SandboxExtractor: extractor, Observer: obs})
		require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key}))
		c.Sweep(context.Background())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, adopted, 1)
		want := deletion.Event{Kind: deletion.EventAdopted, PU: ports.PU{PUID: "a", Pod: key, SandboxID: "s1"},
			Verdict: deletion.Verdict{Action: deletion.Adopt, SandboxID: "s1", Row: 7}}
		assert.Equal(t, want, adopted[0], "EventAdopted sets a field its Kind does not list")
	})
}
