package deletion

import "time"

// backoff is the retry policy of failed destroys and lists: the wait after the first failure is min, and doubles at
// each failure up to max (Options.RetryMinDelay, RetryMaxDelay).
type backoff struct{ min, max time.Duration }

// When returns the wait after the attempts-th failure (attempts >= 1).
func (b backoff) When(attempts int) time.Duration {
	d := b.min
	for i := 1; i < attempts && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}
