package cri

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// DefaultCacheMaxAge is CacheOptions.MaxAge when left at zero: the
// engine's default SweepInterval, so that the periodic checks cost the
// runtime about one list an interval, however many pods the node runs.
// The engine's first and triggered checks ask its SandboxConfirmer instead
// (see SandboxCache).
const DefaultCacheMaxAge = 5 * time.Second

// CacheOptions configure NewSandboxCache.
type CacheOptions struct {
	// MaxAge is how old the list that SandboxID answers from may be: a
	// call finds it at most MaxAge old, or lists again. 0:
	// DefaultCacheMaxAge (5s).
	MaxAge time.Duration
}

// SandboxCache is a ports.SandboxExtractor that answers from one list of
// the runtime's ready sandboxes, shared by every call: the runtime is
// asked once per CacheOptions.MaxAge however many pods are checked,
// instead of once per check (on a node of 110 pods checked every 5 s, one
// call every 5 s instead of 22 a second; BENCHMARKS.md has the process's
// CPU either way). Each answer is the one SandboxExtractor.SandboxID gives for the
// list: the pod's ready sandbox of the highest attempt, then the newest.
//
// Its answers may be MaxAge old, so it must not decide alone: give it to
// the engine as deletion.Options.SandboxExtractor together with the
// SandboxExtractor it lists with as deletion.Options.SandboxConfirmer. The
// engine then asks the runtime itself before it records a sandbox or
// destroys a PU for a changed one, and a list that still shows the
// sandbox a pod ran in before never destroys the PU of its new one. The
// checks that TriggerPod asks for (a pod event: the kubelet reports a
// sandbox restart in the pod's status) ask the SandboxConfirmer alone and
// see a change at once; a change no event told of is seen at the first
// periodic check after a list shows it, within SweepInterval + MaxAge.
//
// Calls that find the list too old while another call lists wait for
// that list (or their context) and share its answer or its failure. A
// failed list is not kept: the next call lists again. It is safe for use
// by several goroutines at once. Once its extractor is closed, it answers
// from its last list until that is MaxAge old, then fails with ErrClosed.
// It says it answers from a list with MaxAge, which deletion.New reads:
// the engine refuses it without a SandboxConfirmer, and as one.
type SandboxCache struct {
	x      *SandboxExtractor
	maxAge time.Duration
	// list and now are the runtime and the clock; tests replace them.
	list func(ctx context.Context) ([]*runtimeapi.PodSandbox, error)
	now  func() time.Time

	mu       sync.Mutex
	byUID    map[string]string // pod UID → its sandbox, from the last list
	listedAt time.Time         // when the last good list was asked for
	listing  *listing          // the list under way, or nil
}

// listing is one list under way; done is closed when it has ended, with
// err set if it failed.
type listing struct {
	done chan struct{}
	err  error
}

var _ ports.SandboxExtractor = (*SandboxCache)(nil)

// NewSandboxCache returns a SandboxCache that lists the sandboxes through
// x, whose Options.Timeout bounds each list. It does not list yet: the
// first SandboxID call does. A nil x is an ErrClosed error; a negative
// MaxAge is an ErrInvalidOptions error.
func NewSandboxCache(x *SandboxExtractor, opts CacheOptions) (*SandboxCache, error) {
	if x == nil || x.client == nil {
		return nil, fmt.Errorf("%w: NewSandboxCache needs an extractor built by New", ErrClosed)
	}
	if opts.MaxAge < 0 {
		return nil, fmt.Errorf("%w: MaxAge is negative (%v)", ErrInvalidOptions, opts.MaxAge)
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = DefaultCacheMaxAge
	}
	c := &SandboxCache{x: x, maxAge: opts.MaxAge, now: time.Now}
	c.list = c.listReady
	return c, nil
}

// MaxAge returns how old the list that SandboxID answers from may be.
func (c *SandboxCache) MaxAge() time.Duration { return c.maxAge }

// SandboxID returns the ID of pod's ready sandbox in a list of the
// runtime's ready sandboxes at most MaxAge old, "" and a nil error when
// the list holds none of the pod's, and an error (never "") when the list
// fails, as SandboxExtractor.SandboxID does, or ctx ends while it waits
// for a list. A nil pod or a pod without a UID is an ErrInvalidPod error.
func (c *SandboxCache) SandboxID(ctx context.Context, pod *corev1.Pod) (string, error) {
	if c == nil || c.x == nil {
		return "", ErrClosed
	}
	if err := checkArgs(ctx, pod); err != nil {
		return "", err
	}
	uid := string(pod.UID)
	c.mu.Lock()
	if c.byUID != nil && c.now().Sub(c.listedAt) <= c.maxAge {
		id := c.byUID[uid]
		c.mu.Unlock()
		return id, nil
	}
	l := c.listing
	if l == nil {
		l = &listing{done: make(chan struct{})}
		c.listing = l
		go c.relist(l)
	}
	c.mu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
		return "", fmt.Errorf("cri: waiting for the list of sandboxes at %s: %w", c.x.endpoint, ctx.Err())
	}
	if l.err != nil {
		return "", l.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byUID[uid], nil
}

// relist lists the ready sandboxes for l, apart from any caller's context
// (a caller that gives up does not fail the others), and keeps the answer
// when it succeeds. Its age counts from when it was asked for.
func (c *SandboxCache) relist(l *listing) {
	asked := c.now()
	ctx, cancel := context.WithTimeout(context.Background(), c.x.timeout)
	defer cancel()
	items, err := c.list(ctx)
	var byUID map[string]string
	if err == nil {
		byUID = pickAll(items)
	}
	c.mu.Lock()
	if err != nil {
		l.err = fmt.Errorf("cri: listing the ready sandboxes at %s: %w", c.x.endpoint, err)
	} else {
		c.byUID, c.listedAt = byUID, asked
	}
	c.listing = nil
	c.mu.Unlock()
	close(l.done)
}

// listReady asks the runtime for its ready sandboxes.
func (c *SandboxCache) listReady(ctx context.Context) ([]*runtimeapi.PodSandbox, error) {
	if c.x.closed.Load() {
		return nil, ErrClosed
	}
	resp, err := c.x.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	if err != nil {
		return nil, err
	}
	return resp.GetItems(), nil
}

// pickAll returns, for every pod UID in items, the sandbox pick chooses
// for it: ready, the highest attempt, then the newest.
func pickAll(items []*runtimeapi.PodSandbox) map[string]string {
	best := make(map[string]*runtimeapi.PodSandbox, len(items))
	for _, sb := range items {
		uid := sb.GetLabels()[PodUIDLabel]
		if uid == "" || sb.GetId() == "" || sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if b, ok := best[uid]; !ok || after(sb, b) {
			best[uid] = sb
		}
	}
	out := make(map[string]string, len(best))
	for uid, sb := range best {
		out[uid] = sb.GetId()
	}
	return out
}
