package deletion_test

// The Inventory's list meets removals: "a list never brings back a PU
// removed while it was under way", however long tracking its answer takes,
// and a PU a trigger queued before Start still takes the sandbox the list
// gives it.

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// slowTrackingList runs the scenario where tracking a list's answer
// outlasts the list's deadline: x is tracked before Start and its pod is
// gone; the first list answers at once with 40 PUs of live pods and then
// x; the Observer takes 100ms an event, with one worker and a CheckTimeout
// of 1s, so that the list's 41 PUs take over 4s to track while checks have
// begun (at 2s, the first list's deadline and a second). remove removes x
// at 3s, before the list's x is tracked, and before x's periodic check
// (SweepInterval 1m).
func slowTrackingList(t *testing.T, remove func(c *deletion.Engine, x ports.PU)) (*destroyLog, *deletion.Engine, ports.PU) {
	t.Helper()
	w := newPodWorld()
	x := ports.PU{PUID: "x", Pod: types.NamespacedName{Namespace: "ns", Name: "x"}} // its pod is gone
	listed := make([]ports.PU, 0, 41)
	for i := range 40 {
		name := fmt.Sprintf("live-%d", i)
		listed = append(listed, ports.PU{PUID: name, Pod: w.put(name, name, testNode, "", corev1.PodRunning)})
	}
	listed = append(listed, x)
	policy := newDestroyLog()
	slow := deletion.ObserverFunc(func(deletion.Event) { time.Sleep(100 * time.Millisecond) })
	inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) { return listed, nil })
	c := newQuiet(t, w, policy, deletion.Options{Workers: 1, CheckTimeout: time.Second, SweepInterval: time.Minute, Inventory: inv, Observer: slow})
	require.NoError(t, c.Track(x))
	startEngine(t, c)
	time.Sleep(3*time.Second - 100*time.Millisecond) // Track's event took 100ms
	remove(c, x)
	time.Sleep(3 * time.Minute)
	synctest.Wait()
	return policy, c, x
}

// TestAListNeverBringsBackAPUDestroyedWhileItsAnswerIsTracked: x is
// destroyed by a trigger while the list's answer, which holds x, is still
// being tracked; the list does not track x again, so it is destroyed once.
func TestAListNeverBringsBackAPUDestroyedWhileItsAnswerIsTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy, c, x := slowTrackingList(t, func(c *deletion.Engine, x ports.PU) {
			c.TriggerPod(x.Pod)
			synctest.Wait()
		})
		assert.Len(t, policy.of(x.PUID), 1, "x is destroyed once: the list does not bring it back")
		assert.Equal(t, 40, c.Len(), "the 40 PUs of live pods are tracked; x is not")
	})
}

// TestAListNeverBringsBackAPUUntrackedWhileItsAnswerIsTracked: the same,
// with Untrack(x) in place of the trigger: no DestroyPU of x ever starts.
func TestAListNeverBringsBackAPUUntrackedWhileItsAnswerIsTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy, c, x := slowTrackingList(t, func(c *deletion.Engine, x ports.PU) {
			require.True(t, c.Untrack(x.PUID))
		})
		assert.Empty(t, policy.of(x.PUID), "no DestroyPU of x starts after Untrack returned")
		assert.Equal(t, 40, c.Len())
	})
}

// TestAPUTriggeredBeforeStartTakesItsListedSandbox: Options.Inventory
// promises that a PU tracked without a sandbox and not yet checked takes
// the sandbox listed for it, so that a sandbox replaced while the agent was
// down is destroyed as changed (row 10), not recorded (row 7). That holds
// for a PU a trigger queued before Start too.
func TestAPUTriggeredBeforeStartTakesItsListedSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newPodWorld()
		key := w.put("web", "web", testNode, "s2", corev1.PodRunning) // replaced s1 while the agent was down
		policy := newDestroyLog()
		var got []ports.DestroyEvent
		rec := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
			got = append(got, ev)
			return policy.DestroyPU(ctx, ev)
		})
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			return []ports.PU{{PUID: "web", Pod: key, SandboxID: "s1"}}, nil
		})
		c := newQuiet(t, w, rec, deletion.Options{SandboxExtractor: w, Inventory: inv, NodeName: testNode})
		require.NoError(t, c.Track(ports.PU{PUID: "web", Pod: key})) // an informer's add, without a sandbox
		c.TriggerPod(key)
		startEngine(t, c)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Len(t, got, 1, "the PU of the replaced sandbox is destroyed")
		assert.Equal(t, ports.ReasonSandboxChanged, got[0].Reason)
		assert.Equal(t, "s1", got[0].SandboxID)
	})
}

// TestAListNeverBringsBackAPUUntrackedBeforeItIsTracked: the agent tears
// down a PU and Untracks it while Start's first list, which holds it, is
// under way: Untrack returns false (it is not tracked yet), and the list
// does not bring it back, so no DestroyPU of it starts.
func TestAListNeverBringsBackAPUUntrackedBeforeItIsTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := ports.PU{PUID: "x", Pod: types.NamespacedName{Namespace: "ns", Name: "x"}} // its pod is gone
		inv := ports.InventoryFunc(func(ctx context.Context) ([]ports.PU, error) {
			time.Sleep(500 * time.Millisecond)
			return []ports.PU{x}, nil
		})
		policy := newDestroyLog()
		c := newQuiet(t, getterOf(nil, ports.ErrPodNotFound), policy, deletion.Options{Inventory: inv, SweepInterval: time.Second})
		startEngine(t, c)
		time.Sleep(100 * time.Millisecond)
		require.False(t, c.Untrack(x.PUID), "not tracked yet")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Empty(t, policy.of(x.PUID), "no DestroyPU of x starts after Untrack returned")
		assert.Zero(t, c.Len())
	})
}
