package deletion

import (
	"sync"
	"time"
)

// The ports whose failures the engine sums up, and their names in the logs.
const (
	portGetPod = iota
	portConfirmer
	portSandboxID
	portSandboxConfirmer
	portSandboxProber
	portDestroyPU
	portRequeue
	numPorts
)

var portNames = [numPorts]string{"GetPod", "Confirmer", "SandboxID", "SandboxConfirmer", "SandboxProber", "DestroyPU", "Requeue"}

// failures sums up each port's failures between two summaries, so that an outage costs one error line per port per
// SweepInterval, not one per PU per check; Observer events still come one per failure.
type failures struct {
	mu       sync.Mutex
	count    [numPorts]int
	last     [numPorts]error
	lastPUID [numPorts]string
	since    time.Time // the first failure since the last summary
}

// portFailed counts a failure of port for e; a PU's first since its last good check is logged at V(1).
func (c *Engine) portFailed(port int, e *record, err error, msg string) {
	if e.lastErr == nil {
		if log := c.log.V(1); log.Enabled() {
			log.Info(msg, "port", portNames[port], "puID", e.PUID, "pod", e.Pod.String(), "error", err.Error())
		}
	}
	f := &c.fails
	f.mu.Lock()
	if f.since.IsZero() {
		f.since = c.opts.Clock.Now()
	}
	f.count[port]++
	f.last[port], f.lastPUID[port] = err, e.PUID
	f.mu.Unlock()
}

// flushFailures logs one error line per port that failed since the last.
func (c *Engine) flushFailures() {
	f := &c.fails
	f.mu.Lock()
	count, last, lastPUID, since := f.count, f.last, f.lastPUID, f.since
	f.count, f.last, f.lastPUID, f.since = [numPorts]int{}, [numPorts]error{}, [numPorts]string{}, time.Time{}
	f.mu.Unlock()
	for port, n := range count {
		if n == 0 {
			continue
		}
		c.log.Error(last[port], "port failing; the PUs concerned are kept and checked again",
			"port", portNames[port], "failures", n, "lastPUID", lastPUID[port],
			"for", c.opts.Clock.Since(since).Round(time.Millisecond).String())
	}
}
