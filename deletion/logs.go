package deletion

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// The ports whose failures the engine sums up, and their names in the logs. portLate is any port, or the Observer,
// that answered past its check's deadline: its slot was stuck meanwhile.
const (
	portGetPod = iota
	portConfirmer
	portSandboxID
	portSandboxConfirmer
	portSandboxProber
	portDestroyPU
	portRequeue
	portListPUs
	portObserver
	portLate
	numPorts
)

var portNames = [numPorts]string{"GetPod", "Confirmer", "SandboxID", "SandboxConfirmer", "SandboxProber", "DestroyPU",
	"Requeue", "ListPUs", "Observer", "a port or the Observer past its check's deadline"}

// logOutcome logs what the check of o.pu did. A PU's failures since its last good check (a port's, a failed destroy,
// a veto for a confirmer's failure) are logged at V(1) once (quiet); every port's failures are summed up once an
// interval (below).
func (c *Engine) logOutcome(o *outcome) {
	pu, v := o.pu, o.verdict
	if log := c.log.V(1); log.Enabled() {
		for _, f := range o.fails {
			if f.msg != "" && !o.quiet {
				log.Info(f.msg, "port", portNames[f.port], "puID", pu.PUID, "pod", pu.Pod.String(), "error", f.err.Error())
			}
		}
	}
	for _, it := range o.events {
		ev := it.ev
		switch ev.Kind {
		case EventAdopted:
			c.log.V(1).Info("sandbox recorded", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", ev.PU.SandboxID)
		case EventWouldDestroy:
			c.log.Info("dry run: PU would be destroyed", "puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(ev.Reason),
				"sandboxID", pu.SandboxID, "row", v.Row, "dropped", ev.Dropped)
		case EventDestroyed:
			c.log.Info("PU destroyed", "puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(ev.Reason), "sandboxID", pu.SandboxID, "row", v.Row)
		case EventDestroyFailed:
			if log := c.log.V(1); log.Enabled() && !o.done && !o.quiet {
				log.Info("destroying PU failed; will retry, unless it was untracked", "puID", pu.PUID,
					"pod", pu.Pod.String(), "error", ev.Err.Error())
			}
		case EventAbandoned:
			c.log.Error(ev.Err, "destroying PU failed for the last time; dropping it, the policy engine may still hold it",
				"puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(ev.Reason), "sandboxID", pu.SandboxID,
				"attempts", ev.DestroyCalls)
		}
	}
	if log := c.log.V(1); log.Enabled() && v.Action == Keep && !o.vetoed {
		log.Info("PU kept", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID, "row", v.Row, "why", v.Why())
	}
}

// failures sums up each port's failures between two summaries, so that an outage costs one error line per port per
// SweepInterval, not one per PU per check; Observer events still come one per failure. It has a lock of its own: the
// ports fail outside the engine's.
type failures struct {
	mu       sync.Mutex
	count    [numPorts]int
	last     [numPorts]error
	lastPUID [numPorts]string
	since    time.Time // the first failure since the last summary
	flushed  time.Time // the last summary
	// wake is Start's scheduler, woken at the first failure since a summary, so that it sums them up within an
	// interval even when nothing else is due (nil: Start does not run).
	wake chan<- struct{}
	// later sums up, once due, the failures a Sweep could not yet while Start never ran (flushSweep); nil: none.
	later *time.Timer
}

// wakeOn has a first failure since a summary wake the scheduler of kick (nil: none).
func (f *failures) wakeOn(kick chan<- struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wake = kick
}

// due returns when a summary of the failures so far is due, every after the last; the zero time: none is.
func (f *failures) due(every time.Duration) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		return time.Time{}
	}
	return f.flushed.Add(every)
}

// add counts a failure of port, for the PU of puid ("": none), at now.
func (f *failures) add(port int, puid string, err error, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		f.since = now
		select {
		case f.wake <- struct{}{}: // nil: never
		default:
		}
	}
	f.count[port]++
	f.last[port], f.lastPUID[port] = err, puid
}

// flush logs one error line per port that failed since the last flush, at now, and starts anew; but not within every
// of the last (0: whenever), whoever asks: Start's scheduler, and each Sweep.
func (f *failures) flush(log logr.Logger, now time.Time, every time.Duration) {
	f.mu.Lock()
	if every > 0 && now.Sub(f.flushed) < every {
		f.mu.Unlock()
		return
	}
	f.flushed = now
	count, last, lastPUID, since := f.count, f.last, f.lastPUID, f.since
	f.count, f.last, f.lastPUID, f.since = [numPorts]int{}, [numPorts]error{}, [numPorts]string{}, time.Time{}
	f.mu.Unlock()
	for port, n := range count {
		if n == 0 {
			continue
		}
		msg := "port failing; the PUs concerned are kept and checked again"
		if port == portLate {
			msg = "answered past a check's deadline, its Workers slot stuck meanwhile; what it answered was taken"
		}
		log.Error(last[port], msg,
			"port", portNames[port], "failures", n, "lastPUID", lastPUID[port],
			"for", now.Sub(since).Round(time.Millisecond).String())
	}
}

// flushFailures logs one error line per port that failed since the last, once per SweepInterval at most.
func (c *Engine) flushFailures() { c.fails.flush(c.log, c.opts.Clock.Now(), c.opts.SweepInterval) }

// flushSweep sums up the failures at a Sweep's end. Those it may not yet (within an interval of the last summary) are
// summed up once due: by Start's scheduler, or, while Start never ran, by a timer of their own, so that an engine
// driven by Sweeps alone is never silent about a port that failed in its last.
func (c *Engine) flushSweep() {
	c.flushFailures()
	due := c.fails.due(c.opts.SweepInterval)
	if c.started.Load() || due.IsZero() {
		return
	}
	f := &c.fails
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.later == nil {
		f.later = time.AfterFunc(max(due.Sub(c.opts.Clock.Now()), 0), func() {
			f.mu.Lock()
			f.later = nil
			f.mu.Unlock()
			c.flushFailures()
		})
	}
}
