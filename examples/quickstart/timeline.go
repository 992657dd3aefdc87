package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/podsweeper/podsweeper/deletion"
)

// timeline is the engine's Observer in this story: it prints every event,
// each check with the row of the decision table that decided and its words
// (keeps too), and lets the story wait for an event instead of sleeping.
//
// The engine reports a check (EventChecked) when it ends, after what it
// did (EventDestroyed, EventVetoed...). The timeline holds those lines
// back and prints them under their check, which it dates from its start.
type timeline struct {
	mu      sync.Mutex
	w       io.Writer
	start   time.Time
	events  []deletion.Event
	changed chan struct{}       // closed and replaced at every event
	held    map[string][]string // lines of a check still running, by PUID
	// heldSince is when the first of them happened: the check began before.
	heldSince map[string]time.Duration
}

func newTimeline(w io.Writer) *timeline {
	return &timeline{w: w, start: time.Now(), changed: make(chan struct{}), held: map[string][]string{}, heldSince: map[string]time.Duration{}}
}

// now is the time since the story began.
func (t *timeline) now() time.Duration { return time.Since(t.start) }

// stamp is a time since the story began, in a column.
func stamp(d time.Duration) string { return fmt.Sprintf("%9s", at(d)) }

// at is a time since the story began, as "+12.3ms".
func at(d time.Duration) string { return fmt.Sprintf("+%.1fms", float64(d.Microseconds())/1000) }

// Observe records ev, prints it, and wakes the story if it waits.
func (t *timeline) Observe(ev deletion.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, ev)
	close(t.changed)
	t.changed = make(chan struct{})

	now, e := t.now(), ev.PU
	switch ev.Kind {
	case deletion.EventChecked:
		began := now - ev.CheckDuration
		if since, ok := t.heldSince[e.PUID]; ok {
			began = min(began, since)
		}
		fmt.Fprintf(t.w, "  %s  check       %-13s %s\n", stamp(began), e.PUID, verdict(ev.Verdict))
		for _, l := range t.held[e.PUID] {
			fmt.Fprint(t.w, l)
		}
		delete(t.held, e.PUID)
		delete(t.heldSince, e.PUID)
	case deletion.EventTracked:
		t.lineLocked(e.PUID, now, "Track       %-13s pod %s, sandbox %q", e.PUID, e.Pod, e.SandboxID)
	case deletion.EventUntracked:
		t.lineLocked(e.PUID, now, "Untrack     %-13s forgotten, not destroyed", e.PUID)
	case deletion.EventGetFailed:
		t.holdLocked(e.PUID, now, sub(now, "read failed: %v", ev.Err))
	case deletion.EventAdopted:
		t.holdLocked(e.PUID, now, sub(now, "sandbox %q recorded as the PU's", e.SandboxID))
	case deletion.EventVetoed:
		t.holdLocked(e.PUID, now, sub(now, "VETOED: the cache's answer meant %s; the Confirmer's (the API server's) is row %d: kept",
			ev.Reason, ev.Verdict.Row))
	case deletion.EventDestroyed:
		t.holdLocked(e.PUID, now, sub(now, "DESTROYED   pod %s, sandbox %q: %s (attempt %d)", e.Pod, e.SandboxID, ev.Reason, ev.DestroyCalls))
	case deletion.EventDestroyFailed:
		next := "no retry"
		if !ev.Next.IsZero() {
			next = "retry due at " + at(ev.Next.Sub(t.start))
		}
		t.holdLocked(e.PUID, now, sub(now, "destroy failed (attempt %d): %v; %s", ev.DestroyCalls, ev.Err, next))
	case deletion.EventAbandoned:
		t.holdLocked(e.PUID, now, sub(now, "ABANDONED   after %d attempt(s): the error is permanent", ev.DestroyCalls))
	default:
		t.lineLocked(e.PUID, now, "%s %s", ev.Kind, e.PUID)
	}
}

// verdict is a check's verdict in words: its row, what it did and why.
func verdict(v deletion.Verdict) string {
	s := fmt.Sprintf("row %-2d %s: %s", v.Row, v.Action, v.Why())
	if v.Action == deletion.Destroy {
		s += " (" + string(v.Reason) + ")"
	}
	return s
}

func sub(when time.Duration, format string, args ...any) string {
	return fmt.Sprintf("  %s    └ %s\n", stamp(when), fmt.Sprintf(format, args...))
}

// holdLocked holds line back until the check of puid ends.
func (t *timeline) holdLocked(puid string, when time.Duration, line string) {
	if _, ok := t.heldSince[puid]; !ok {
		t.heldSince[puid] = when
	}
	t.held[puid] = append(t.held[puid], line)
}

// lineLocked prints a line now, or holds it back under the check of puid
// that is still running (a Track by the Requeuer, say).
func (t *timeline) lineLocked(puid string, when time.Duration, format string, args ...any) {
	l := fmt.Sprintf("  %s  %s\n", stamp(when), fmt.Sprintf(format, args...))
	if _, running := t.held[puid]; running {
		t.holdLocked(puid, when, l)
		return
	}
	fmt.Fprint(t.w, l)
}

// say prints a line of the story (what the cluster or the agent does).
func (t *timeline) say(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "  %s  %s\n", stamp(t.now()), fmt.Sprintf(format, args...))
}

// agentSays prints a line of the agent's, held under the check of puid if
// one is running: the Requeuer runs inside a check.
func (t *timeline) agentSays(puid, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lineLocked(puid, t.now(), format, args...)
}

// header prints the title of a scene.
func (t *timeline) header(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "\n%s\n", fmt.Sprintf(format, args...))
}

// mark returns the position of the next event, for await.
func (t *timeline) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.events)
}

// await returns the first event from position from on that match accepts,
// waiting for it at most waitLimit: a story that waits longer has gone wrong.
func (t *timeline) await(ctx context.Context, from int, what string, match func(deletion.Event) bool) (deletion.Event, error) {
	limit := time.NewTimer(waitLimit)
	defer limit.Stop()
	for {
		t.mu.Lock()
		for _, ev := range t.events[from:] {
			if match(ev) {
				t.mu.Unlock()
				return ev, nil
			}
		}
		from = len(t.events)
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-limit.C:
			return deletion.Event{}, fmt.Errorf("waited %v for %s", waitLimit, what)
		case <-ctx.Done():
			return deletion.Event{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// snapshot returns every event so far.
func (t *timeline) snapshot() []deletion.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]deletion.Event(nil), t.events...)
}

// checked matches the end of a check of puid decided by row.
func checked(puid string, row int) func(deletion.Event) bool {
	return func(ev deletion.Event) bool {
		return ev.Kind == deletion.EventChecked && ev.PU.PUID == puid && ev.Verdict.Row == row
	}
}

// engineLogger returns the engine's Logger: with verbose, its logs (V(1)
// included) on w; else a sink that drops them, for the timeline says it
// all. The zero Logger (logr.Discard() is one) would mean klog's default.
func engineLogger(verbose bool, w io.Writer) logr.Logger {
	return logr.New(&lineSink{w: w, on: verbose, mu: &sync.Mutex{}})
}

// lineSink is a minimal logr.LogSink: one line per log call on w, or nothing.
type lineSink struct {
	w    io.Writer
	on   bool
	name string
	kv   []any
	mu   *sync.Mutex
}

func (s *lineSink) Init(logr.RuntimeInfo)  {}
func (s *lineSink) Enabled(level int) bool { return s.on && level <= 1 }
func (s *lineSink) Info(level int, msg string, kv ...any) {
	s.print(fmt.Sprintf("V(%d) %s", level, msg), kv)
}
func (s *lineSink) Error(err error, msg string, kv ...any) {
	if s.on {
		s.print("ERROR "+msg, append([]any{"err", err}, kv...))
	}
}
func (s *lineSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.kv = append(append([]any(nil), s.kv...), kv...)
	return &c
}
func (s *lineSink) WithName(name string) logr.LogSink {
	c := *s
	c.name += "/" + name
	return &c
}
func (s *lineSink) print(msg string, kv []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := append(append([]any(nil), s.kv...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		msg += fmt.Sprintf(" %v=%v", all[i], all[i+1])
	}
	fmt.Fprintf(s.w, "engine%s: %s\n", s.name, msg)
}
