package deletion_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// The model-based test: the fuzzer's bytes become operations on a tiny
// cluster of modelSlots pod names; the engine (through Sweep) and an obvious
// model of the decision table run side by side, and after every sweep their
// destroys, abandons, requeues and remaining entries must match.

const (
	modelSlots       = 4
	modelNode        = "node-a"
	modelMaxAttempts = 3
	modelMaxOps      = 256
)

// Operations, one per pair of bytes (op, arg): arg&3 is the pod slot, the
// other bits of arg pick a variant.
const (
	modelTrack = iota
	modelDelete
	modelRecreate
	modelChangeSandbox
	modelFailNextGet
	modelFailNextSandbox
	modelSweep
	modelMove
	modelFailNextDestroy
	modelOps
)

type modelPod struct {
	exists             bool
	uid, node, sandbox string
}

type modelEntry struct {
	puid     string
	slot     int
	sandbox  string
	attempts int
}

// modelCluster is the truth both sides read, and the faults planned for the
// next sweep. A sweep reads it only: the order of checks cannot matter.
type modelCluster struct {
	pods        [modelSlots]modelPod
	failGet     [modelSlots]int // 0 none, 1 error, 2 nil pod and nil error, 3 another pod
	failSandbox [modelSlots]bool
	failDestroy [modelSlots]int // 0 none, 1 transient, 2 permanent
}

func modelKey(slot int) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("pod-%d", slot)}
}

func modelSlot(key types.NamespacedName) int {
	var slot int
	if _, err := fmt.Sscanf(key.Name, "pod-%d", &slot); err != nil || slot < 0 || slot >= modelSlots {
		panic("model: unknown pod " + key.String())
	}
	return slot
}

// modelPorts serves the cluster to the engine and records what it does.
type modelPorts struct {
	cl *modelCluster

	mu        sync.Mutex
	destroyed []ports.DestroyEvent
	abandoned []string
	requeued  []string
}

func (m *modelPorts) GetPod(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	slot := modelSlot(key)
	p := m.cl.pods[slot]
	switch m.cl.failGet[slot] {
	case 1:
		return nil, errors.New("model: get failed")
	case 2:
		return nil, nil
	case 3:
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name + "-other", UID: types.UID(p.uid)}}, nil
	}
	if !p.exists {
		return nil, fmt.Errorf("model: %s: %w", key, ports.ErrPodNotFound)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(p.uid)},
		Spec:       corev1.PodSpec{NodeName: p.node},
	}, nil
}

func (m *modelPorts) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	slot := modelSlot(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if m.cl.failSandbox[slot] {
		return "", errors.New("model: sandbox lookup failed")
	}
	return m.cl.pods[slot].sandbox, nil
}

func (m *modelPorts) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	switch m.cl.failDestroy[modelSlot(ev.Pod)] {
	case 1:
		return errors.New("model: destroy failed")
	case 2:
		return ports.Permanent(errors.New("model: destroy refused"))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.destroyed = append(m.destroyed, ev)
	return nil
}

func (m *modelPorts) Requeue(_ context.Context, pod *corev1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requeued = append(m.requeued, string(pod.UID))
	return nil
}

func (m *modelPorts) Observe(ev deletion.Event) {
	if ev.Kind == deletion.EventAbandoned {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.abandoned = append(m.abandoned, ev.Entry.PUID)
	}
}

// modelOutcome is what one sweep did, on either side.
type modelOutcome struct {
	Destroyed []ports.DestroyEvent
	Abandoned []string
	Requeued  []string
	Pending   []deletion.Entry
}

func (o *modelOutcome) sort() {
	if len(o.Pending) == 0 {
		o.Pending = nil
	}
	slices.SortFunc(o.Destroyed, func(a, b ports.DestroyEvent) int { return cmp.Compare(a.PUID, b.PUID) })
	slices.Sort(o.Abandoned)
	slices.Sort(o.Requeued)
	slices.SortFunc(o.Pending, func(a, b deletion.Entry) int { return cmp.Compare(a.PUID, b.PUID) })
}

// model is the obvious implementation of the decision table.
type model struct {
	entries map[string]*modelEntry
}

func (m *model) sweep(cl *modelCluster) modelOutcome {
	var out modelOutcome
	for _, e := range m.entries {
		p := cl.pods[e.slot]
		var reason ports.Reason
		switch {
		case cl.failGet[e.slot] != 0: // never destroy on a failed read
		case !p.exists:
			reason = ports.ReasonPodGone
		case p.node != "" && p.node != modelNode:
			reason = ports.ReasonNodeChanged
		case p.uid != e.puid:
			reason = ports.ReasonUIDChanged
		case cl.failSandbox[e.slot]:
		case e.sandbox == "":
			e.sandbox = p.sandbox // adopt, maybe "" again
		case p.sandbox == "": // not known yet: the seed would destroy here
		case p.sandbox != e.sandbox:
			reason = ports.ReasonSandboxChanged
		}
		if reason == "" {
			continue
		}
		switch cl.failDestroy[e.slot] {
		case 0:
			out.Destroyed = append(out.Destroyed, ports.DestroyEvent{PUID: e.puid, Pod: modelKey(e.slot), SandboxID: e.sandbox, Reason: reason})
		case 1:
			if e.attempts++; e.attempts < modelMaxAttempts {
				continue
			}
			out.Abandoned = append(out.Abandoned, e.puid)
		case 2:
			e.attempts++
			out.Abandoned = append(out.Abandoned, e.puid)
		}
		if reason == ports.ReasonSandboxChanged {
			out.Requeued = append(out.Requeued, p.uid)
		}
		delete(m.entries, e.puid)
	}
	for _, e := range m.entries {
		out.Pending = append(out.Pending, deletion.Entry{PUID: e.puid, Pod: modelKey(e.slot), SandboxID: e.sandbox})
	}
	out.sort()
	return out
}

// runModel decodes data into operations and runs them on both sides.
func runModel(t *testing.T, data []byte) {
	cl := &modelCluster{}
	mp := &modelPorts{cl: cl}
	c, err := deletion.New(mp, mp, deletion.Options{
		SandboxExtractor:   mp,
		Requeuer:           mp,
		NodeName:           modelNode,
		Workers:            2,
		MaxDestroyAttempts: modelMaxAttempts,
		Observer:           mp,
	})
	require.NoError(t, err)
	m := &model{entries: map[string]*modelEntry{}}
	ids := 0
	id := func(prefix string) string { ids++; return fmt.Sprintf("%s%d", prefix, ids) }
	var trace []string

	sweep := func() {
		want := m.sweep(cl)
		c.Sweep(context.Background())
		mp.mu.Lock()
		got := modelOutcome{Destroyed: mp.destroyed, Abandoned: mp.abandoned, Requeued: mp.requeued, Pending: c.Pending()}
		mp.destroyed, mp.abandoned, mp.requeued = nil, nil, nil
		mp.mu.Unlock()
		got.sort()
		require.Equal(t, want, got, "after: %v", trace)
		*cl = modelCluster{pods: cl.pods} // the planned faults were for this sweep
	}

	for i := 0; i+1 < len(data) && i/2 < modelMaxOps; i += 2 {
		op, arg := int(data[i])%modelOps, int(data[i+1])
		slot, variant := arg%modelSlots, arg/modelSlots
		p := &cl.pods[slot]
		trace = append(trace, fmt.Sprintf("op%d(slot %d, variant %d)", op, slot, variant))
		switch op {
		case modelTrack:
			e := deletion.Entry{PUID: p.uid, Pod: modelKey(slot), SandboxID: p.sandbox}
			if !p.exists || variant%4 == 3 {
				e.PUID = id("u-stale") // a PU of a pod that is already gone
			}
			switch variant / 4 % 3 {
			case 1:
				e.SandboxID = "" // tracked before the sandbox was known
			case 2:
				e.SandboxID = id("s-old") // tracked with a sandbox since replaced
			}
			require.NoError(t, c.Track(e))
			if _, ok := m.entries[e.PUID]; !ok { // insert-only
				m.entries[e.PUID] = &modelEntry{puid: e.PUID, slot: slot, sandbox: e.SandboxID}
			}
		case modelDelete:
			*p = modelPod{}
		case modelRecreate, modelMove:
			node := modelNode
			if op == modelMove {
				node = []string{"node-b", ""}[variant%2]
			}
			sb := id("s")
			if variant%3 == 2 {
				sb = ""
			}
			*p = modelPod{exists: true, uid: id("u"), node: node, sandbox: sb}
		case modelChangeSandbox:
			if p.sandbox = id("s"); variant%3 == 2 {
				p.sandbox = ""
			}
		case modelFailNextGet:
			cl.failGet[slot] = 1 + variant%3
		case modelFailNextSandbox:
			cl.failSandbox[slot] = true
		case modelFailNextDestroy:
			cl.failDestroy[slot] = 1 + variant%2
		case modelSweep:
			sweep()
		}
	}
	sweep()
}

// FuzzModel checks the engine against the model on sequences of operations.
// CI runs the committed corpus (testdata/fuzz/FuzzModel); run the fuzzer
// with go test -fuzz=FuzzModel ./deletion/.
func FuzzModel(f *testing.F) {
	f.Add([]byte{modelRecreate, 0, modelTrack, 0, modelSweep, 0, modelDelete, 0, modelSweep, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, data)
	})
}
