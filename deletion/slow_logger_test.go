package deletion_test

// A slow Logger is no port: the engine's Logger is someone else's code (klog
// on stderr into a pipe the runtime drains slowly, a synchronous shipper),
// and a check writing its lines is in no port. LivenessCheck does not fail
// for it, a Sweep does not return before the check is done, Start's stop
// does not blame a port for it, and a list's answer is not held by it.

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// slowLogger writes into logs, taking d for each line that contains slow (V(1) enabled).
func slowLogger(logs *logBuffer, slow string, d time.Duration) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if strings.Contains(args, slow) {
			time.Sleep(d)
		}
		logs.mu.Lock()
		defer logs.mu.Unlock()
		logs.buf.WriteString(prefix + args + "\n")
	}, funcr.Options{Verbosity: 1})
}

func TestASlowLoggerIsNoStuckPort(t *testing.T) {
	live := func() (*deletiontest.Cluster, types.NamespacedName) {
		cl := deletiontest.NewCluster()
		return cl, addPod(cl, "a", "a", testNode, "", corev1.PodRunning)
	}
	t.Run("LivenessCheck and a Sweep", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cl, key := live()
			var logs logBuffer
			events := &deletiontest.Events{}
			c := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Workers: 1, CheckTimeout: time.Second,
				Observer: events, Logger: slowLogger(&logs, "PU kept", 5*time.Second)})
			require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key}))
			swept := make(chan struct{})
			go func() { c.Sweep(t.Context()); close(swept) }()
			time.Sleep(3 * time.Second) // its line is being written, past CheckTimeout and a second
			assert.NoError(t, c.LivenessCheck(nil), "a check writing its log line taken for one stuck in a port")
			select {
			case <-swept:
				t.Error("the Sweep returned before its check was done, as if it were stuck in a port")
			default:
			}
			<-swept
			assert.Len(t, events.Of(deletion.EventChecked), 1, "the Sweep returned once its check was done")
			assert.Empty(t, logs.lines("ignore their context"), "a port blamed for the Logger's time")
		})
	})
	t.Run("Start's stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cl, key := live()
			var logs logBuffer
			c := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Workers: 1, ShutdownTimeout: time.Second,
				Logger: slowLogger(&logs, "PU kept", 5*time.Second)})
			require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key}))
			stop := deletiontest.Start(t, c)
			c.TriggerPod(key)
			time.Sleep(100 * time.Millisecond) // its line is being written
			stop()
			assert.Empty(t, logs.lines("stuck in ports"), "Start's stop blamed a port for the Logger's time:\n%s", logs.String())
			time.Sleep(5 * time.Second) // the line written, the check ends
		})
	})
	t.Run("a list's answer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cl, key := live()
			var logs logBuffer
			// Listed first (by PUID), and tracked by the one worker before the other.
			inv := deletiontest.NewInventory(ports.PU{PUID: "0-bad", Pod: types.NamespacedName{Name: "no-namespace"}}, ports.PU{PUID: "a", Pod: key})
			c := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Workers: 1, SweepInterval: time.Second, Inventory: inv,
				Logger: slowLogger(&logs, "skipping a PU", 10*time.Second)})
			deletiontest.Start(t, c)
			time.Sleep(5 * time.Second) // three SweepIntervals and more while the skipped PU's line is written
			err := c.LivenessCheck(nil)
			assert.False(t, errors.Is(err, deletion.ErrBehind), "a list's answer held by the Logger taken for an Inventory or Observer that no longer moves: %v", err)
			time.Sleep(10 * time.Second)
		})
	})
	t.Run("a sandbox a list gives", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			cl, key := live()
			var logs logBuffer
			// Tracked bare first, each given its sandbox by the list, by the one worker in turn.
			inv := deletiontest.NewInventory(ports.PU{PUID: "a", Pod: key, SandboxID: "s-a"}, ports.PU{PUID: "b", Pod: key, SandboxID: "s-b"})
			c := deletiontest.NewEngine(t, cl, &deletiontest.Policy{}, deletion.Options{Workers: 1, SweepInterval: time.Second, Inventory: inv,
				Logger: slowLogger(&logs, "sandbox recorded from the Inventory", 10*time.Second)})
			require.NoError(t, c.Track(ports.PU{PUID: "a", Pod: key}))
			require.NoError(t, c.Track(ports.PU{PUID: "b", Pod: key}))
			deletiontest.Start(t, c)
			time.Sleep(5 * time.Second)
			err := c.LivenessCheck(nil)
			assert.False(t, errors.Is(err, deletion.ErrBehind), "a list's answer held by the Logger: %v", err)
			time.Sleep(30 * time.Second)
			assert.Len(t, logs.lines("sandbox recorded from the Inventory"), 2, "each sandbox the list gave is logged, once the list has ended")
		})
	})
}
