package deletiontest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

var (
	_ ports.PodGetter        = (*Cluster)(nil)
	_ ports.SandboxExtractor = (*Cluster)(nil)
	_ ports.SandboxProber    = (*Cluster)(nil)
)

// Cluster is an in-memory API server and container runtime: the pods of
// every node, each bound to a node and running in a sandbox. It is a
// ports.PodGetter, a ports.SandboxExtractor and a ports.SandboxProber over
// the same pods; APIServer is a PodGetter of the same pods for the engine's
// Confirmer. Its methods are safe from any goroutine. Create it with
// NewCluster.
//
// GetPod answers a deep copy of the pod, or, when there is none of that
// name, an error that wraps ports.ErrPodNotFound (deletion.IsNotFound
// reports it). FailReads, FailAllReads, HangReads, HangAllReads and
// SetReadDelay change how GetPod answers, until they are undone: GetPod is
// the pod cache, which may fail, hang or lag behind; APIServer's reads are
// the API server's, which none of them changes.
type Cluster struct {
	mu        sync.Mutex
	pods      map[types.NamespacedName]*corev1.Pod
	sandboxes map[types.UID]string // the current sandbox of each pod, by UID
	known     map[string]bool      // every sandbox ID a pod ran in
	given     map[types.UID]bool   // every UID a pod of the cluster had
	uids      int

	reads      map[types.NamespacedName]int
	allReads   int
	readErr    map[types.NamespacedName]error
	allReadErr error
	hangs      map[types.NamespacedName]chan struct{}
	hangAll    chan struct{}
	readDelay  time.Duration
	sandboxErr error
}

// NewCluster returns a Cluster without pods.
func NewCluster() *Cluster {
	return &Cluster{
		pods:      map[types.NamespacedName]*corev1.Pod{},
		sandboxes: map[types.UID]string{},
		known:     map[string]bool{},
		given:     map[types.UID]bool{},
		reads:     map[types.NamespacedName]int{},
		readErr:   map[types.NamespacedName]error{},
		hangs:     map[types.NamespacedName]chan struct{}{},
	}
}

// Pod returns a running pod at key, bound to node, with that UID: what
// Cluster.CreatePod stores, for a test that needs the pod itself (a
// Requeuer's expectation, AddPod with another phase).
func Pod(key types.NamespacedName, uid types.UID, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: uid},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// CreatePod creates a running pod at key, bound to node, running in the
// sandbox sandboxID ("": none yet), with a UID of its own (uid-1, uid-2...
// in the order of creation; never one a pod of the cluster had), and returns the PU an agent would track for
// it. A pod already at key is replaced: it is the same as deleting it and
// creating a new one under the same name.
func (c *Cluster) CreatePod(key types.NamespacedName, node, sandboxID string) ports.PU {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.putLocked(Pod(key, c.newUIDLocked(), node), sandboxID)
}

// AddPod stores a deep copy of pod, running in the sandbox sandboxID ("":
// none yet), and returns its PU; a pod of the same name is replaced. A pod
// without a UID is given one, as CreatePod does. It is CreatePod for a test
// that chooses the UID, the phase or any other field.
func (c *Cluster) AddPod(pod *corev1.Pod, sandboxID string) ports.PU {
	pod = pod.DeepCopy()
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod.UID == "" {
		pod.UID = c.newUIDLocked()
	}
	return c.putLocked(pod, sandboxID)
}

// RecreatePod replaces the pod at key by a new one under the same name and
// on the same node (a StatefulSet's pod deleted and created again), with a
// new UID and the sandbox sandboxID, and returns the new pod's PU. It
// returns an error wrapping ports.ErrPodNotFound when there is no pod at key.
func (c *Cluster) RecreatePod(key types.NamespacedName, sandboxID string) (ports.PU, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, err := c.podLocked(key)
	if err != nil {
		return ports.PU{}, err
	}
	return c.putLocked(Pod(key, c.newUIDLocked(), old.Spec.NodeName), sandboxID), nil
}

// DeletePod deletes the pod at key, and reports whether there was one. Its
// sandbox is dead from then on (SandboxDead).
func (c *Cluster) DeletePod(key types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pods[key]
	if ok {
		delete(c.sandboxes, p.UID)
		delete(c.pods, key)
	}
	return ok
}

// MovePod binds the pod at key to node, keeping its UID. It returns an
// error wrapping ports.ErrPodNotFound when there is no pod at key.
func (c *Cluster) MovePod(key types.NamespacedName, node string) error {
	return c.update(key, func(p *corev1.Pod) { p.Spec.NodeName = node })
}

// SetPhase sets the phase of the pod at key (corev1.PodSucceeded: a
// finished Job's pod). It returns an error wrapping ports.ErrPodNotFound
// when there is no pod at key.
func (c *Cluster) SetPhase(key types.NamespacedName, phase corev1.PodPhase) error {
	return c.update(key, func(p *corev1.Pod) { p.Status.Phase = phase })
}

// SetSandbox makes the pod at key run in the sandbox sandboxID, as when the
// runtime replaced its sandbox; the one it ran in is dead from then on. It
// returns an error wrapping ports.ErrPodNotFound when there is no pod at key.
func (c *Cluster) SetSandbox(key types.NamespacedName, sandboxID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.podLocked(key)
	if err != nil {
		return err
	}
	c.setSandboxLocked(p.UID, sandboxID)
	return nil
}

// KillSandbox makes the sandbox of the pod at key die, as on a node that
// lost its runtime's state: the pod runs in no sandbox (SandboxID answers
// "") and SandboxDead reports the one it ran in dead. It returns an error
// wrapping ports.ErrPodNotFound when there is no pod at key.
func (c *Cluster) KillSandbox(key types.NamespacedName) error {
	return c.SetSandbox(key, "")
}

// PU returns the PU of the pod at key, as an agent would track it now, and
// whether there is a pod at key.
func (c *Cluster) PU(key types.NamespacedName) (ports.PU, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pods[key]
	if !ok {
		return ports.PU{}, false
	}
	return ports.PU{PUID: string(p.UID), Pod: key, SandboxID: c.sandboxes[p.UID]}, true
}

// PUs returns the PU of every pod, sorted by pod.
func (c *Cluster) PUs() []ports.PU {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ports.PU, 0, len(c.pods))
	for key, p := range c.pods {
		out = append(out, ports.PU{PUID: string(p.UID), Pod: key, SandboxID: c.sandboxes[p.UID]})
	}
	slices.SortFunc(out, func(a, b ports.PU) int {
		return cmp.Or(cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Name, b.Pod.Name))
	})
	return out
}

// FailReads makes every GetPod of key answer err, whether the pod exists
// or not, until FailReads(key, nil). ports.ErrPodNotFound (wrapped or not)
// reads as a pod that is gone: a lagging cache. Other errors read as a
// failed read, on which the engine keeps the PU.
func (c *Cluster) FailReads(key types.NamespacedName, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		delete(c.readErr, key)
		return
	}
	c.readErr[key] = err
}

// FailAllReads makes every GetPod answer err, until FailAllReads(nil). It
// comes before FailReads.
func (c *Cluster) FailAllReads(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allReadErr = err
}

// HangReads makes every GetPod of key block until release is called, then
// answer as the cluster stands; a read whose context ends first answers an
// error wrapping its context's. release may be called more than once.
func (c *Cluster) HangReads(key types.NamespacedName) (release func()) {
	ch := make(chan struct{})
	c.mu.Lock()
	c.hangs[key] = ch
	c.mu.Unlock()
	return sync.OnceFunc(func() {
		c.mu.Lock()
		if c.hangs[key] == ch {
			delete(c.hangs, key)
		}
		c.mu.Unlock()
		close(ch)
	})
}

// HangAllReads makes every GetPod block until release is called, as
// HangReads does for one pod.
func (c *Cluster) HangAllReads() (release func()) {
	ch := make(chan struct{})
	c.mu.Lock()
	c.hangAll = ch
	c.mu.Unlock()
	return sync.OnceFunc(func() {
		c.mu.Lock()
		if c.hangAll == ch {
			c.hangAll = nil
		}
		c.mu.Unlock()
		close(ch)
	})
}

// SetReadDelay makes every GetPod take d before it answers (0: none), or
// answer an error wrapping its context's once that ends first. In a
// testing/synctest bubble d is fake time: it is how long a check takes.
func (c *Cluster) SetReadDelay(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDelay = d
}

// FailSandboxIDs makes every SandboxID answer err, until FailSandboxIDs(nil):
// a runtime that cannot be reached.
func (c *Cluster) FailSandboxIDs(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sandboxErr = err
}

// Reads returns how many times GetPod was called for key, failed and hung
// calls included.
func (c *Cluster) Reads(key types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[key]
}

// AllReads returns how many times GetPod was called, for any pod.
func (c *Cluster) AllReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.allReads
}

// APIServer returns the cluster's pods as the API server answers them, for
// the engine's Confirmer: a deep copy of the pod, or an error wrapping
// ports.ErrPodNotFound. The faults of the cache (FailReads, HangReads,
// SetReadDelay) do not change its answers, so that a cache that lags
// (FailReads with ports.ErrPodNotFound) is vetoed, as in a cluster.
func (c *Cluster) APIServer() ports.PodGetter {
	return ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		p, err := c.podLocked(key)
		if err != nil {
			return nil, err
		}
		return p.DeepCopy(), nil
	})
}

// GetPod returns a deep copy of the pod at key, or an error wrapping
// ports.ErrPodNotFound when there is none; FailReads, FailAllReads,
// HangReads, HangAllReads and SetReadDelay change its answer.
func (c *Cluster) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	c.mu.Lock()
	c.reads[key]++
	c.allReads++
	hangs, delay := []chan struct{}{c.hangAll, c.hangs[key]}, c.readDelay
	c.mu.Unlock()
	for _, ch := range hangs {
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("deletiontest: reading pod %s: %w", key, ctxErr(ctx))
		}
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("deletiontest: reading pod %s: %w", key, ctxErr(ctx))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.allReadErr != nil {
		return nil, c.allReadErr
	}
	if err := c.readErr[key]; err != nil {
		return nil, err
	}
	p, err := c.podLocked(key)
	if err != nil {
		return nil, err
	}
	return p.DeepCopy(), nil
}

// SandboxID returns the sandbox the pod of pod's UID runs in: "" when it
// runs in none yet, or when no pod of the cluster has that UID (the runtime
// lists no sandbox of it).
func (c *Cluster) SandboxID(_ context.Context, pod *corev1.Pod) (string, error) {
	if pod == nil {
		return "", errors.New("deletiontest: SandboxID of a nil pod")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sandboxErr != nil {
		return "", c.sandboxErr
	}
	return c.sandboxes[pod.UID], nil
}

// SandboxDead reports whether the sandbox sandboxID is dead: a pod of the
// cluster ran in it and none runs in it now (its pod was deleted or
// recreated, or the sandbox was replaced or killed). A sandbox the cluster
// never saw is not dead: the runtime cannot tell.
func (c *Cluster) SandboxDead(_ context.Context, _ *corev1.Pod, sandboxID string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known[sandboxID] {
		return false, nil
	}
	for _, id := range c.sandboxes {
		if id == sandboxID {
			return false, nil
		}
	}
	return true, nil
}

// newUIDLocked returns the next UID that no pod of the cluster has or ever
// had (AddPod may have given one of the form uid-N): a UID, as the API
// server's, is never given twice, so that a pod deleted and created anew
// is another pod to the engine.
func (c *Cluster) newUIDLocked() types.UID {
	for {
		c.uids++
		uid := types.UID(fmt.Sprintf("uid-%d", c.uids))
		if !c.given[uid] {
			return uid
		}
	}
}

// ctxErr is ctx's error, and its cause when that is another: a call cut
// short answers as a client of a real server would (context.Canceled or
// DeadlineExceeded), with the reason.
func ctxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// putLocked stores pod, which the cluster owns, and returns its PU.
func (c *Cluster) putLocked(pod *corev1.Pod, sandboxID string) ports.PU {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if old, ok := c.pods[key]; ok {
		delete(c.sandboxes, old.UID)
	}
	c.pods[key] = pod
	c.given[pod.UID] = true
	c.setSandboxLocked(pod.UID, sandboxID)
	return ports.PU{PUID: string(pod.UID), Pod: key, SandboxID: sandboxID}
}

func (c *Cluster) setSandboxLocked(uid types.UID, sandboxID string) {
	c.sandboxes[uid] = sandboxID
	if sandboxID != "" {
		c.known[sandboxID] = true
	}
}

// podLocked returns the pod at key, or an error wrapping ports.ErrPodNotFound.
func (c *Cluster) podLocked(key types.NamespacedName) (*corev1.Pod, error) {
	p, ok := c.pods[key]
	if !ok {
		return nil, fmt.Errorf("deletiontest: pod %s: %w", key, ports.ErrPodNotFound)
	}
	return p, nil
}

// update applies f to the pod at key.
func (c *Cluster) update(key types.NamespacedName, f func(*corev1.Pod)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.podLocked(key)
	if err != nil {
		return err
	}
	// A copy: a pod GetPod handed out is never modified.
	p = p.DeepCopy()
	f(p)
	c.pods[key] = p
	return nil
}
