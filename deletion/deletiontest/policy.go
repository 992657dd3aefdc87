package deletiontest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

var _ ports.PolicyHandler = (*Policy)(nil)

// Policy is a ports.PolicyHandler that records every DestroyPU call and
// answers as the test asks: success by default, or an error (FailNext,
// Fail), a hang (Hang), or the answer of a function (SetAnswer). Its
// methods are safe from any goroutine. The zero value is ready to use.
type Policy struct {
	mu       sync.Mutex
	calls    []Call
	failNext int
	nextErr  error
	failErr  error
	hang     chan struct{}
	answer   func(context.Context, ports.DestroyEvent) error
}

// Call is one DestroyPU call.
type Call struct {
	// Event is the call's DestroyEvent.
	Event ports.DestroyEvent
	// At is when the call started, on the time package's clock (fake in a
	// testing/synctest bubble).
	At time.Time
	// Done is set once the call has returned, and Err is what it returned.
	Done bool
	Err  error
}

// DestroyPU records the call, then answers it. A call hangs first while a
// Hang is in force (until released, or an error wrapping its context's once
// that ends); then the error of FailNext while calls of it remain, the
// error of Fail when one is set, SetAnswer's function when one is set, and
// nil otherwise.
func (p *Policy) DestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	p.mu.Lock()
	i := len(p.calls)
	p.calls = append(p.calls, Call{Event: ev, At: time.Now()})
	hang := p.hang
	p.mu.Unlock()

	err := p.answerCall(ctx, ev, hang)

	p.mu.Lock()
	p.calls[i].Done, p.calls[i].Err = true, err
	p.mu.Unlock()
	return err
}

func (p *Policy) answerCall(ctx context.Context, ev ports.DestroyEvent, hang chan struct{}) error {
	if hang != nil {
		select {
		case <-hang:
		case <-ctx.Done():
			return fmt.Errorf("deletiontest: DestroyPU of %s: %w", ev.PUID, ctxErr(ctx))
		}
	}
	p.mu.Lock()
	switch {
	case p.failNext > 0:
		p.failNext--
		err := p.nextErr
		p.mu.Unlock()
		return err
	case p.failErr != nil:
		err := p.failErr
		p.mu.Unlock()
		return err
	}
	answer := p.answer
	p.mu.Unlock()
	if answer == nil {
		return nil
	}
	return answer(ctx, ev)
}

// FailNext makes the next n calls answer err (nil: success), whichever PU
// they destroy. Wrap err with ports.Permanent for an error the engine does
// not retry.
func (p *Policy) FailNext(n int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext, p.nextErr = n, err
}

// Fail makes every call answer err, until Fail(nil); FailNext comes first.
func (p *Policy) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failErr = err
}

// Hang makes every call that starts from now on block until release is
// called (then answer as usual), or its context ends. release may be called
// more than once.
func (p *Policy) Hang() (release func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.hang = ch
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		if p.hang == ch {
			p.hang = nil
		}
		p.mu.Unlock()
		close(ch)
	})
}

// SetAnswer makes f answer every call neither FailNext nor Fail answers
// (nil: success). f is called after the call is recorded, without a lock
// held: it may call p's methods, block or sleep.
func (p *Policy) SetAnswer(f func(ctx context.Context, ev ports.DestroyEvent) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = f
}

// Calls returns every call, in the order they started.
func (p *Policy) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// CallsOf returns the calls that destroyed the PU of puid, in the order
// they started.
func (p *Policy) CallsOf(puid string) []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Call
	for _, c := range p.calls {
		if c.Event.PUID == puid {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls destroyed the PU of puid, failed ones included.
func (p *Policy) Count(puid string) int {
	return len(p.CallsOf(puid))
}

// CallCount returns how many calls there were, for any PU.
func (p *Policy) CallCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// Destroyed returns the events of the calls that returned nil, in the
// order they started.
func (p *Policy) Destroyed() []ports.DestroyEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ports.DestroyEvent
	for _, c := range p.calls {
		if c.Done && c.Err == nil {
			out = append(out, c.Event)
		}
	}
	return out
}
