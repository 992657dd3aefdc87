package testcni

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// Recorder is a Resync Tracker that records what Resync tells it: the PUs
// tracked, the PU IDs untracked (Untrack reports each as tracked) and the
// pods triggered ("namespace/name").
type Recorder struct {
	mu                   sync.Mutex
	tracked              []ports.PU
	untracked, triggered []string
}

// Track records pu.
func (r *Recorder) Track(pu ports.PU) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracked = append(r.tracked, pu)
	return nil
}

// Untrack records puID and reports true.
func (r *Recorder) Untrack(puID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.untracked = append(r.untracked, puID)
	return true
}

// TriggerPod records pod.
func (r *Recorder) TriggerPod(pod types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.triggered = append(r.triggered, pod.String())
}

// Snapshot returns copies of what r recorded so far, at one time.
func (r *Recorder) Snapshot() (tracked []ports.PU, untracked, triggered []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ports.PU(nil), r.tracked...), append([]string(nil), r.untracked...), append([]string(nil), r.triggered...)
}

// Tracked returns a copy of the PUs tracked so far.
func (r *Recorder) Tracked() []ports.PU { t, _, _ := r.Snapshot(); return t }

// Triggered returns a copy of the pods triggered so far ("namespace/name").
func (r *Recorder) Triggered() []string { _, _, tr := r.Snapshot(); return tr }
