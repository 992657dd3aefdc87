package cni

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
)

// A refusal is timed from the first since the sandbox's place was last
// known: it expires after the timeout, restarts once the sandbox is seen
// ready or dead, and a sandbox given up on is remembered until the cache
// no longer holds it.
func TestRefusalsTimeFromTheFirstSinceThePlaceWasKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRefusals(5 * time.Minute)
		refused := verdict{ID: "s", Action: refuse, State: stateCreating}
		require.False(t, r.expired("s"), "never refused")
		r.record([]verdict{refused})
		time.Sleep(4 * time.Minute)
		r.record([]verdict{refused})
		require.False(t, r.expired("s"), "4m: timed from the first refusal, not expired")
		time.Sleep(time.Minute)
		require.True(t, r.expired("s"), "5m since the first refusal")

		r.settle([]verdict{{ID: "s", State: stateReady, Action: free}})
		require.False(t, r.expired("s"), "listed ready: its place is known, the time forgotten")
		r.record([]verdict{refused})
		time.Sleep(5 * time.Minute)
		require.True(t, r.expired("s"))
		r.settle([]verdict{{ID: "s", State: stateCreating, Action: refuse}})
		require.True(t, r.expired("s"), "settle records no refusal and forgets none of a sandbox whose place is not known")

		r.record([]verdict{{ID: "s", Action: giveUp, State: stateCreating}})
		require.True(t, r.givenUp("s"))
		require.True(t, r.expired("s"), "given up: its time kept, for its gone pod (row 10)")
		r.retain(func(id string) bool { return id == "s" })
		require.True(t, r.givenUp("s"), "still cached")
		r.retain(func(string) bool { return false })
		require.False(t, r.givenUp("s"), "gone from the cache: forgotten")
	})
}

// LogMessageEntrySkipped: "once for each cache entry it skips". An entry skipped is logged once, not again when its
// file is only touched, again once written anew with another container (what it tells changed), and again once
// skipped after it was not.
func TestSkipLogLogsEachSkippedEntryOnce(t *testing.T) {
	var lines int
	l := newSkipLog(funcr.New(func(string, string) { lines++ }, funcr.Options{}), "skipping")
	t0 := time.Unix(1_700_000_000, 0)
	a := skipped{File: "a", ContainerID: "c1", Written: t0, Why: "no pod"}
	l.report([]skipped{a}, nil)
	l.report([]skipped{a}, nil)
	require.Equal(t, 1, lines, "logged once")
	a.Written = t0.Add(time.Second)
	l.report([]skipped{a}, nil)
	require.Equal(t, 1, lines, "touched: not logged again")
	a.ContainerID = "c2"
	l.report([]skipped{a}, nil)
	require.Equal(t, 2, lines, "written anew, of another container: logged again")
	l.report(nil, nil)
	l.report([]skipped{a}, nil)
	require.Equal(t, 3, lines, "gone, then back: logged again")
}
