package deletion_test

// Sweep's promises where it meets checks stuck in ports: it returns once
// every check it waits for is held by one stuck past its deadline,
// whoever began it, and sooner when it is known stuck already.

import (
	"context"
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

// TestASecondSweepDoesNotWaitForACheckKnownStuck: CheckTimeout 1s and a
// GetPod that ignores its context for 20s. The first Sweep returns once
// the check is stuck past its deadline (about 2s); the next one, which
// begins with that check past its deadline already, returns at once, for
// its default CheckTimeout of 30s too.
func TestASecondSweepDoesNotWaitForACheckKnownStuck(t *testing.T) {
	for _, timeout := range []time.Duration{time.Second, deletion.DefaultCheckTimeout} {
		t.Run(timeout.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
					select { // ignores its context
					case <-time.After(20 * timeout):
					case <-release:
					}
					return podAt(key, key.Name), nil
				})
				c := newQuiet(t, getter, newDestroyLog(), deletion.Options{CheckTimeout: timeout})
				require.NoError(t, c.Track(pu("x")))
				t0 := time.Now()
				c.Sweep(context.Background())
				first := time.Since(t0)
				assert.LessOrEqual(t, first, timeout+2*time.Second, "the first Sweep leaves the stuck check past its deadline")
				t1 := time.Now()
				c.Sweep(context.Background())
				assert.Less(t, time.Since(t1), 100*time.Millisecond, "the second Sweep does not wait for a check known stuck")
				close(release)
				synctest.Wait()
			})
		})
	}
}
