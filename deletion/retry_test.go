package deletion

// The retry policy (Engine.backoff, check.go), alone.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// retryEngine returns an engine whose retries wait from minDelay up to maxDelay.
func retryEngine(t *testing.T, minDelay, maxDelay time.Duration) *Engine {
	c, err := New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, nil }),
		ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		Options{RetryMinDelay: minDelay, RetryMaxDelay: maxDelay})
	require.NoError(t, err)
	return c
}

func TestTheRetryWaitDoublesFromItsMinimumUpToItsMaximum(t *testing.T) {
	c := retryEngine(t, time.Second, 10*time.Second)
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, c.backoff(n))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, got)
}

func TestTheRetryWaitNeverOverflows(t *testing.T) {
	c := retryEngine(t, time.Nanosecond, MaxDuration)
	assert.Equal(t, MaxDuration, c.backoff(1<<30), "a PU retried for ever waits MaxDuration at most")
}
