package deletion

import (
	"cmp"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// The ports whose failures the engine sums up, and their names in the logs; portLate is any port, or the Observer,
// that answered past its check's deadline, portStuck one a Sweep left.
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
	portStuck
	numPorts
)

var portNames = [numPorts]string{"GetPod", "Confirmer", "SandboxID", "SandboxConfirmer", "SandboxProber", "DestroyPU",
	"Requeue", "ListPUs", "Observer", "a port or the Observer past its check's deadline",
	"a port that ignores its context, whose checks a Sweep left"}

// summaryMsgs are the messages of the summaries of the ports that have their own.
var summaryMsgs = [numPorts]string{
	portLate:    "answered past a check's deadline, its Workers slot stuck meanwhile; what it answered was taken",
	portStuck:   "Sweep leaves checks stuck in ports that ignore their context",
	portListPUs: listFailed,
}

// logOutcome logs what the check of o.pu did. A PU's failures since its last good check are logged at V(1) once
// (quiet); every port's failures are summed up once an interval (failures).
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
			msg := "destroying PU failed for the last time; dropping it, the policy engine may still hold it"
			if ev.DryRun {
				msg = "dry run: the dry run of destroying PU failed for the last time; dropping it, the policy engine still holds it"
			}
			c.log.Error(ev.Err, msg,
				"puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(ev.Reason), "sandboxID", pu.SandboxID,
				"attempts", ev.DestroyCalls)
		}
	}
	if o.untrackedDestroy {
		c.log.Info("PU destroyed", "puID", pu.PUID, "pod", pu.Pod.String(), "reason", string(v.Reason), "sandboxID", pu.SandboxID,
			"row", v.Row, "untrackedMeanwhile", true)
	}
	if log := c.log.V(1); log.Enabled() && v.Action == Keep && !o.vetoed {
		log.Info("PU kept", "puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID, "row", v.Row, "why", v.Why())
	}
}

// failures sums up each port's failures, so that an outage costs one error line per port per SweepInterval, not one
// per PU per check. Its timer, on the engine's Clock, is armed at the first failure since a summary and stopped once
// nothing is left to sum up. It has a lock of its own: the ports fail outside the engine's.
type failures struct {
	log   logr.Logger
	clock clock.WithTicker
	every time.Duration // SweepInterval

	writing sync.Mutex // held through a whole flush: a Sweep that returns after its flush has its lines written
	mu      sync.Mutex
	ports   [numPorts]portFailures
	since   time.Time // the first failure since the last summary, when pending
	pending bool      // a failure waits for its summary
	flushed time.Time // the last summary, when summed
	summed  bool      // a summary was written
	timer   func()    // stops the summary's timer; nil: none is armed
}

// portFailures are one port's failures since the last summary: how many, the last and its PU.
type portFailures struct {
	n    int
	last error
	puid string
}

// add counts a failure of port, for the PU of puid ("": none), at now; the first since a summary arms its timer.
func (f *failures) add(port int, puid string, err error, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.pending {
		f.since, f.pending = now, true
		f.arm()
	}
	p := &f.ports[port]
	p.n, p.last, p.puid = p.n+1, err, puid
}

// arm sets the summary's timer, if none is, for when it is due: every after the last. f.mu is held.
func (f *failures) arm() {
	if f.timer != nil {
		return
	}
	wait := time.Duration(0)
	if f.summed {
		wait = max(f.flushed.Add(f.every).Sub(f.clock.Now()), 0)
	}
	if wait == 0 { // due now: a fake Clock's timer of 0 would wait for its next Step
		f.timer = func() {}
		go f.fire()
		return
	}
	if c, ok := f.clock.(interface {
		AfterFunc(time.Duration, func()) clock.Timer
	}); ok { // the real clock's and k8s.io/utils' fakes (calling it under their lock): no goroutine waits meanwhile
		t := c.AfterFunc(wait, func() { go f.fire() })
		f.timer = func() { t.Stop() }
		return
	}
	t, stop := f.clock.NewTimer(wait), make(chan struct{})
	f.timer = func() { t.Stop(); close(stop) }
	go func() {
		select {
		case <-t.C():
			f.fire()
		case <-stop:
		}
	}()
}

// fire is the summary's timer: it sums up the failures, or arms again if the clock says they are not yet due.
func (f *failures) fire() {
	f.mu.Lock()
	f.timer = nil
	f.mu.Unlock()
	f.flush(f.clock.Now(), f.every)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending {
		f.arm()
	}
}

// flush logs one error line per port that failed since the last flush, at now, and starts anew; but not within every
// of the last (0: whenever).
func (f *failures) flush(now time.Time, every time.Duration) {
	f.writing.Lock()
	defer f.writing.Unlock()
	f.mu.Lock()
	if !f.pending || every > 0 && f.summed && now.Sub(f.flushed) < every {
		f.mu.Unlock()
		return
	}
	f.flushed, f.summed = now, true
	ports, since := f.ports, f.since
	f.ports, f.pending = [numPorts]portFailures{}, false
	if f.timer != nil { // nothing left: the timer stops; the next failure arms another
		f.timer()
		f.timer = nil
	}
	f.mu.Unlock()
	for port, p := range ports {
		if p.n > 0 {
			f.log.Error(p.last, cmp.Or(summaryMsgs[port], "port failing; the PUs concerned are kept and checked again"),
				"port", portNames[port], "failures", p.n, "lastPUID", p.puid, "for", now.Sub(since).Round(time.Millisecond).String())
		}
	}
}
