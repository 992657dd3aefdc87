package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// cluster is the story's in-memory Kubernetes, in plain Go: the pods the
// API server holds (live), the copy a node agent's informer cache keeps of
// them (cache, which lags until sync delivers a change), and the sandboxes
// the container runtime reports. A real agent reads the cache through
// controller-runtime or client-go and the runtime over the CRI.
type cluster struct {
	mu    sync.Mutex
	live  map[types.NamespacedName]*corev1.Pod
	cache map[types.NamespacedName]*corev1.Pod
	// cacheErr, when set, fails every read of the cache.
	cacheErr error
	// sandboxes is the current sandbox of each pod, by pod UID ("" or
	// missing: not known yet); runtimeErr fails the runtime's answer.
	sandboxes  map[types.UID]string
	runtimeErr map[types.UID]error
}

func newCluster() *cluster {
	return &cluster{
		live:       map[types.NamespacedName]*corev1.Pod{},
		cache:      map[types.NamespacedName]*corev1.Pod{},
		sandboxes:  map[types.UID]string{},
		runtimeErr: map[types.UID]error{},
	}
}

// newPod returns a running pod of the story's namespace bound to node.
func newPod(name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func keyOf(p *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// edit runs f under the cluster's lock: the engine's reads see the
// cluster before f or after it, never halfway.
func (c *cluster) edit(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// put stores p in the API server (creating or replacing the pod of its
// name); the cache sees it at the next sync.
func (c *cluster) put(p *corev1.Pod) { c.live[keyOf(p)] = p }

// remove deletes the pod of key from the API server.
func (c *cluster) remove(key types.NamespacedName) { delete(c.live, key) }

// sync makes the informer deliver what the API server holds for key.
func (c *cluster) sync(key types.NamespacedName) {
	if p, ok := c.live[key]; ok {
		c.cache[key] = p
	} else {
		delete(c.cache, key)
	}
}

func (c *cluster) get(from map[types.NamespacedName]*corev1.Pod, key types.NamespacedName, err error) (*corev1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p, ok := from[key]
	if !ok {
		return nil, fmt.Errorf("pods %q not found: %w", key.Name, ports.ErrPodNotFound)
	}
	return p.DeepCopy(), nil
}

// cacheReader is the engine's PodGetter: what the agent's informer cache
// holds, as a real agent reads it (adapters/k8s.NewPodGetter(mgr.GetClient())).
func (c *cluster) cacheReader() ports.PodGetter {
	return ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		c.mu.Lock()
		err := c.cacheErr
		c.mu.Unlock()
		return c.get(c.cache, key, err)
	})
}

// apiReader is the engine's Confirmer: a direct read of the API server
// (adapters/k8s.NewPodGetter(mgr.GetAPIReader())).
func (c *cluster) apiReader() ports.PodGetter {
	return ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		return c.get(c.live, key, nil)
	})
}

// runtime is the engine's SandboxExtractor: the container runtime's answer
// (adapters/cri over the CRI).
func (c *cluster) runtime() ports.SandboxExtractor {
	return ports.SandboxExtractorFunc(func(_ context.Context, pod *corev1.Pod) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if err := c.runtimeErr[pod.UID]; err != nil {
			return "", err
		}
		return c.sandboxes[pod.UID], nil
	})
}

// policyEngine stands for the agent's policy engine: it destroys PUs, and
// answers the errors the story gives it for the next calls of a PU.
type policyEngine struct {
	mu    sync.Mutex
	tl    *timeline
	fail  map[string][]error // by PUID: the errors of its next DestroyPU calls, in order
	calls []destroyCall
}

// destroyCall is one DestroyPU call and its answer.
type destroyCall struct {
	ev  ports.DestroyEvent
	at  time.Duration // since the story began
	err error
}

// failNext makes the next DestroyPU of puid fail with err.
func (p *policyEngine) failNext(puid string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail[puid] = append(p.fail[puid], err)
}

// DestroyPU is the PolicyHandler: a real one tears down the PU's firewall
// rules, network binding or identity, and succeeds for a PU it does not know.
func (p *policyEngine) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	if errs := p.fail[ev.PUID]; len(errs) > 0 {
		err, p.fail[ev.PUID] = errs[0], errs[1:]
	}
	p.calls = append(p.calls, destroyCall{ev: ev, at: p.tl.now(), err: err})
	return err
}
