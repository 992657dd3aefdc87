package ports_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/podsweeper/podsweeper/ports"
)

// go doc ports.Sprint: "a string, a bool or a number is itself; any other value is named by its type alone".
func TestSprintPrintsNumbersAsThemselves(t *testing.T) {
	type myInt int
	var nilErr *flipOnce
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "nil"},
		{"boom", "boom"},
		{true, "true"},
		{42, "42"},
		{myInt(-7), "-7"},
		{uint8(200), "200"},
		{2.5, "2.5"},
		{float32(0.25), "0.25"},
		{complex(1, -2), "(1-2i)"},
		{complex64(complex(0.5, 3)), "(0.5+3i)"},
		{errors.New("reset"), "reset"},
		{error(nilErr), "a *ports_test.flipOnce that cannot be read"},
		{struct{ A int }{1}, "a struct { A int }"},
	} {
		if got := ports.Sprint(tc.v); got != tc.want {
			t.Errorf("Sprint(%T) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// flipOnce unwraps to a plain failure the first time it is asked, and to the not-found error after: a cause its own
// code replaces once the call has returned.
type flipOnce struct{ reads atomic.Int32 }

func (e *flipOnce) Error() string { return "lookup failed" }
func (e *flipOnce) Unwrap() error {
	if e.reads.Add(1) == 1 {
		return errors.New("connection reset")
	}
	return ports.ErrPodNotFound
}

// go doc ports.Match: "each error in it is asked Unwrap once and given to match once, one met twice (errors.Join(e,
// e)) too": an error that appears twice in a tree is read once, so its second reading cannot turn a failure into a
// not-found.
func TestMatchReadsAnErrorMetTwiceOnce(t *testing.T) {
	e := &flipOnce{}
	seen := 0
	if ports.Match(errors.Join(e, e), func(err error) bool {
		if err == e {
			seen++
		}
		return err == ports.ErrPodNotFound //nolint:errorlint // the leaf itself: errors.Is would read e again
	}) {
		t.Errorf("Match of errors.Join(e, e) found the not-found error e's second Unwrap gives: e was read twice")
	}
	if n := e.reads.Load(); n != 1 {
		t.Errorf("e was asked Unwrap %d times, want 1", n)
	}
	if seen != 1 {
		t.Errorf("e was given to match %d times, want 1", seen)
	}
}

// go doc ports.Readable: "at most 256 errors in all": an error met again still counts, so that a loop or a tree of
// repeated children is too big to read, while a small tree with a repeat is read.
func TestReadableCountsAnErrorMetAgain(t *testing.T) {
	loop := &selfWrap{}
	loop.inner = loop
	if ports.Readable(loop) {
		t.Errorf("an error that wraps itself is readable")
	}
	deep := errors.New("x")
	for range 60 {
		deep = errors.Join(deep, deep)
	}
	if ports.Readable(deep) {
		t.Errorf("errors.Join(e, e) nested 60 times (2^60 errors) is readable")
	}
	x := errors.New("x")
	if !ports.Readable(errors.Join(x, x)) {
		t.Errorf("errors.Join(x, x) is not readable")
	}
}

type selfWrap struct{ inner error }

func (e *selfWrap) Error() string { return "self" }
func (e *selfWrap) Unwrap() error { return e.inner }

// go doc ports.Snapshot: "returns a copy of what that reading said, which answers the same whatever err's errors
// answer the next time": a copy of an error whose cause changes once read says, at every reading, the cause read
// first; it is Is and As what that reading held, and nil for an error that cannot be read.
func TestSnapshotAnswersAsItsOneReading(t *testing.T) {
	e := &flipOnce{}
	shared := errors.New("shared")
	snap := ports.Snapshot(errors.Join(fmt.Errorf("wrapped: %w", e), shared, fmt.Errorf("again: %w", shared)))
	if snap == nil {
		t.Fatal("a readable error: Snapshot gave nil")
	}
	if got := e.reads.Load(); got != 1 {
		t.Fatalf("Snapshot asked the flipping error Unwrap %d times, want once", got)
	}
	for range 3 {
		if errors.Is(snap, ports.ErrPodNotFound) {
			t.Fatal("the copy is Is ErrPodNotFound, which only a second reading of the error says")
		}
		if !errors.Is(snap, e) || !errors.Is(snap, shared) {
			t.Fatal("the copy is not Is the errors its reading held")
		}
		var fo *flipOnce
		if !errors.As(snap, &fo) || fo != e {
			t.Fatal("the copy is not As the *flipOnce its reading held")
		}
		if !strings.Contains(snap.Error(), "connection reset") && !strings.Contains(snap.Error(), "lookup failed") {
			t.Fatalf("the copy's message %q is not the one read", snap.Error())
		}
	}
	if e.reads.Load() != 1 {
		t.Fatalf("reading the copy read the error again (%d Unwraps)", e.reads.Load())
	}
	if !ports.Match(snap, func(e error) bool { fo, ok := e.(*flipOnce); return ok && fo == e }) {
		t.Fatal("Match over the copy does not give its match the *flipOnce the copy is of")
	}
	var nilErr *flipOnce
	if ports.Snapshot(fmt.Errorf("x: %w", nilErr)) != nil || ports.Snapshot(nil) != nil {
		t.Fatal("Snapshot of an error that cannot be read, or of nil, is not nil")
	}
}
