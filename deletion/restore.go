package deletion

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// listFailed is the line of a failed list of the Inventory: each at V(1), and their summary (logs.go).
const listFailed = "listing the Inventory failed; PUs of pods gone while the agent was down are not restored yet, will retry"

// restore lists the Inventory until it answers in time or ctx ends, with backoff, and tracks every valid PU of the
// answer that listWindow and unlistedMemory do not hold. listed is closed once the first list has ended: its answer
// tracked, before EventRestored.
func (c *Engine) restore(ctx context.Context, listed chan<- struct{}) {
	for attempt := 1; ; attempt++ {
		pus, err := c.list(ctx)
		if err == nil {
			restored, skipped, cut, skips, invalid := c.trackAll(pus)
			c.listTracked(!cut)
			if attempt == 1 {
				close(listed)
			}
			if ctx.Err() == nil {
				c.tellList(Event{Kind: EventRestored, Count: restored, ListCalls: attempt, Err: invalid})
			}
			c.listEnds()
			// The log lines once the list has ended: a slow Logger (someone else's code) holds no PU of it from going
			// in, and is no Inventory or Observer that no longer moves (LivenessCheck).
			for _, sk := range skips {
				if sk.err == nil {
					c.log.V(1).Info("sandbox recorded from the Inventory", "puID", sk.pu.PUID, "pod", sk.pu.Pod.String(), "sandboxID", sk.pu.SandboxID)
					continue
				}
				c.log.V(1).Info("skipping a PU the Inventory listed", "puID", sk.pu.PUID, "pod", sk.pu.Pod.String(), "error", sk.err.Error())
			}
			c.log.Info("PUs restored from the Inventory", "listed", len(pus), "restored", restored, "skipped", skipped, "attempts", attempt,
				"leftForTheNextRun", cut) // Start stopped while they went in: the rest stay in the Inventory
			if invalid != nil { // one line, however many: the Inventory answers nonsense
				c.log.Error(invalid, "skipping PUs the Inventory listed", "skipped", skipped)
			}
			return
		}
		c.listEnds()
		if attempt == 1 {
			close(listed) // the checks begin: the Observer's EventListFailed holds none, as EventRestored
		}
		if ctx.Err() != nil {
			return
		}
		c.log.V(1).Info(listFailed, "attempt", attempt, "retryIn", c.backoff(attempt).String(), "error", err.Error())
		c.fails.add(portListPUs, "", err, c.opts.Clock.Now())
		c.tellList(Event{Kind: EventListFailed, Err: err, ListCalls: attempt})
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Clock.After(c.backoff(attempt)):
		}
	}
}

// listWindow is what the Inventory's lists keep of removals, under puQueue.mu: a list under way must not bring back a
// PU removed meanwhile, or whose removal the Observer (a journal) was being told when it began.
type listWindow struct {
	// gone holds the PUIDs removed since the list under way began (nil: none is), until its answer is tracked, or end
	// (realNow) if it has not answered by then.
	gone     map[string]struct{}
	end      int64          // 0: the list answered in time; its answer is being tracked
	progress int64          // while its answer is tracked: when a PU of it last began or ended going in (Engine.now)
	deadline int64          // the list's deadline (realNow): an answer after it is a failure
	removing map[string]int // PUIDs whose removal the Observer is being told
	restored bool           // a list answered: none is to come
	// telling: since when (Engine.now) the Observer is told an event of the lists (EventListFailed, EventRestored);
	// 0: none is. No list is retried meanwhile (waits).
	telling   int64
	tellingOf EventKind
}

func (w *listWindow) removed(puid string, now int64) {
	w.removing[puid]++
	if w.gone != nil && (w.end == 0 || now <= w.end) {
		w.gone[puid] = struct{}{}
	}
}

func (w *listWindow) told(puid string) {
	if w.removing[puid]--; w.removing[puid] <= 0 {
		delete(w.removing, puid)
	}
}

// unlistedMemory remembers, under puQueue.mu, the PUs destroyed, given up on or dropped while no list has answered
// yet, so that a list does not bring them back: the latest twice limit, the most PUs tracked at once (at least
// minUnlistedMemory). The Untracks of PUIDs the engine did not hold are kept apart, never pushing out a removal.
type unlistedMemory struct {
	gone, untracked []string // the latest, oldest first
	limit           int
}

const minUnlistedMemory = 16

// saw raises the limit to tracked, a number of PUs tracked at once.
func (m *unlistedMemory) saw(tracked int) { m.limit = max(m.limit, tracked, minUnlistedMemory) }

// add remembers puid, removed with tracked PUs tracked.
func (m *unlistedMemory) add(puid string, tracked int) { m.gone = m.remember(m.gone, puid, tracked) }

// addUntracked remembers puid, which Untrack was given but the engine did not hold, with tracked PUs tracked.
func (m *unlistedMemory) addUntracked(puid string, tracked int) {
	m.untracked = m.remember(m.untracked, puid, tracked)
}

// remember appends puid to latest, with tracked PUs tracked, and forgets the oldest past twice the limit.
func (m *unlistedMemory) remember(latest []string, puid string, tracked int) []string {
	m.saw(tracked)
	latest = append(latest, puid)
	return latest[max(len(latest)-2*m.limit, 0):]
}

// copy returns what m remembers, in a new set with room for extra more.
func (m *unlistedMemory) copy(extra int) map[string]struct{} {
	out := make(map[string]struct{}, len(m.gone)+len(m.untracked)+extra)
	for _, latest := range [][]string{m.gone, m.untracked} {
		for _, puid := range latest {
			out[puid] = struct{}{}
		}
	}
	return out
}

// errListCut is track's answer to a PU a list gave once Start stops: it is left in the Inventory for the next run.
var errListCut = errors.New("the engine stops: the PU is left for the next run")

// skippedPU is a PU of a list's answer that was not tracked, and why (err), or that was given the sandbox listed (err
// nil), for the log (V(1)).
type skippedPU struct {
	pu  ports.PU
	err error
}

// trackAll tracks pus from Workers goroutines, so that a journal's commits are shared, and returns how many were new,
// how many invalid, whether Start stopping left some out (cut), V(1) enabled the invalid ones, to log once the list has
// ended, and the first invalid one's error.
func (c *Engine) trackAll(pus []ports.PU) (restored, skipped int, cut bool, skips []skippedPU, invalid error) {
	var next, nRestored, nSkipped, nCut atomic.Int64
	var first atomic.Pointer[error]
	var skipsMu sync.Mutex
	verbose := c.log.V(1).Enabled()
	var wg sync.WaitGroup
	for range min(c.opts.Workers, len(pus)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(pus)); i = next.Add(1) - 1 {
				pu := pus[i]
				c.listProgress()
				isNew, err := c.track(pu, true)
				switch {
				case errors.Is(err, errListCut):
					nCut.Add(1)
				case err != nil:
					nSkipped.Add(1)
					first.CompareAndSwap(nil, &err)
					if verbose {
						skipsMu.Lock()
						skips = append(skips, skippedPU{pu, err})
						skipsMu.Unlock()
					}
				case isNew:
					nRestored.Add(1)
				case c.adoptListed(pu):
					nRestored.Add(1)
					if verbose {
						skipsMu.Lock()
						skips = append(skips, skippedPU{pu: pu}) // not skipped: given the sandbox listed
						skipsMu.Unlock()
					}
				}
				c.listProgress()
			}
		})
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		invalid = fmt.Errorf("%d PUs the Inventory listed are invalid, not tracked; the first: %w", nSkipped.Load(), *e)
	}
	return int(nRestored.Load()), int(nSkipped.Load()), nCut.Load() > 0, skips, invalid
}

// listTimeout is the deadline of a list: CheckTimeout, at least a second.
func (c *Engine) listTimeout() time.Duration { return max(c.opts.CheckTimeout, time.Second) }
