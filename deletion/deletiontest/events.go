package deletiontest

import (
	"slices"
	"sync"

	"github.com/podsweeper/podsweeper/deletion"
)

var _ deletion.Observer = (*Events)(nil)

// Events is a deletion.Observer that records every Event it is told, in
// order. Its methods are safe from any goroutine. The zero value is ready
// to use.
type Events struct {
	mu  sync.Mutex
	all []deletion.Event
}

// Observe records ev.
func (e *Events) Observe(ev deletion.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// All returns every event recorded, in order.
func (e *Events) All() []deletion.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.all)
}

// Of returns the events of the kinds given, in order.
func (e *Events) Of(kinds ...deletion.EventKind) []deletion.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []deletion.Event
	for _, ev := range e.all {
		if slices.Contains(kinds, ev.Kind) {
			out = append(out, ev)
		}
	}
	return out
}

// Count returns how many events of kind k were recorded.
func (e *Events) Count(k deletion.EventKind) int {
	return len(e.Of(k))
}
