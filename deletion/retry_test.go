package deletion

// The retry policy (retry.go), alone.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTheRetryWaitDoublesFromItsMinimumUpToItsMaximum(t *testing.T) {
	b := backoff{time.Second, 10 * time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, b.When(n))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, got)
}

func TestTheRetryWaitNeverOverflows(t *testing.T) {
	b := backoff{time.Nanosecond, MaxDuration}
	assert.Equal(t, MaxDuration, b.When(1<<30), "a PU retried for ever waits MaxDuration at most")
}
