package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func pu(puid, name, sandbox string) ports.PU {
	return ports.PU{PUID: puid, Pod: types.NamespacedName{Namespace: "ns", Name: name}, SandboxID: sandbox}
}

func event(kind deletion.EventKind, e ports.PU) deletion.Event {
	return deletion.Event{Kind: kind, PU: e}
}

// open opens a journal in the test's directory, closed at the end of the test.
func open(t *testing.T, path string) *Journal {
	t.Helper()
	j, err := Open(path, Options{Logger: quiet()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, j.Close()) })
	return j
}

func newPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "journal.db")
}

func list(t *testing.T, j *Journal) []ports.PU {
	t.Helper()
	pus, err := j.ListPUs(context.Background())
	require.NoError(t, err)
	return pus
}

// reopened lists the journal at path as a new process would see it.
func reopened(t *testing.T, path string) []ports.PU {
	t.Helper()
	j, err := Open(path, Options{Logger: quiet()})
	require.NoError(t, err)
	defer func() { require.NoError(t, j.Close()) }()
	return list(t, j)
}

// commits returns the ID of the last committed write transaction: it grows
// by one at each commit.
func commits(t *testing.T, j *Journal) int {
	t.Helper()
	var id int
	require.NoError(t, j.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }))
	return id
}

func TestRoundTrip(t *testing.T) {
	path := newPath(t)
	j, err := Open(path, Options{Logger: quiet()})
	require.NoError(t, err)
	want := []ports.PU{pu("uid-a", "web-0", "sb-a"), pu("uid-b", "web-1", ""), pu("uid-c", "db-0", "sb-c")}
	for _, i := range []int{2, 0, 1} {
		j.Observe(event(deletion.EventTracked, want[i]))
	}
	assert.Equal(t, want, list(t, j), "sorted by PUID")
	require.NoError(t, j.Close())
	require.NoError(t, j.Close(), "a second Close is harmless")

	assert.Equal(t, want, reopened(t, path))
}

func TestEmptyJournalListsNothing(t *testing.T) {
	j := open(t, newPath(t))
	assert.Empty(t, list(t, j))
}

func TestTrackingTheSameRecordCostsNoWrite(t *testing.T) {
	j := open(t, newPath(t))
	p := pu("uid-a", "web-0", "sb-a")
	j.Observe(event(deletion.EventTracked, p))
	before := commits(t, j)

	for range 100 {
		j.Observe(event(deletion.EventTracked, p))
	}
	assert.Equal(t, before, commits(t, j), "a restore re-tracks what the journal holds: no commit")

	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "sb-b")))
	assert.Equal(t, before+1, commits(t, j), "a different record is written")
	assert.Equal(t, []ports.PU{pu("uid-a", "web-0", "sb-b")}, list(t, j), "EventTracked replaces the record: the engine tracks it anew")
}

// After a restart, a pod informer tracks the PU again without a sandbox
// before the engine's restore lists the journal: the record keeps the
// sandbox of before, or a sandbox replaced meanwhile could not be seen. A
// Track for another pod under the PUID still replaces the record.
func TestTrackWithoutSandboxKeepsTheRecordedOne(t *testing.T) {
	path := newPath(t)
	j := open(t, path)
	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "sb-old")))
	j.Observe(event(deletion.EventTracked, pu("uid-b", "web-1", "sb-1")))
	before := commits(t, j)

	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "")))
	assert.Equal(t, before, commits(t, j), "nothing to write")
	j.Observe(event(deletion.EventTracked, pu("uid-b", "other", "")))
	assert.Equal(t, []ports.PU{pu("uid-a", "web-0", "sb-old"), pu("uid-b", "other", "")}, list(t, j))
	require.NoError(t, j.Close())
	assert.Equal(t, []ports.PU{pu("uid-a", "web-0", "sb-old"), pu("uid-b", "other", "")}, reopened(t, path))
}

func TestAdoptRecordsTheSandbox(t *testing.T) {
	path := newPath(t)
	j := open(t, path)
	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "")))
	j.Observe(event(deletion.EventAdopted, pu("uid-a", "web-0", "sb-1")))
	j.Observe(event(deletion.EventAdopted, pu("uid-gone", "web-9", "sb-9")))

	assert.Equal(t, []ports.PU{pu("uid-a", "web-0", "sb-1")}, list(t, j),
		"the sandbox is recorded; an adoption never brings back a PU the journal does not hold")
	require.NoError(t, j.Close())
	assert.Equal(t, []ports.PU{pu("uid-a", "web-0", "sb-1")}, reopened(t, path))
}

// TestAdoptIfNoneKeepsTheSandboxFromBefore: an EventAdopted told IfNone (a sandbox a check recorded before the
// Inventory's list was in) fills the sandbox of a record that has none, and leaves the one a record holds from before
// a restart, for Start's list to give.
func TestAdoptIfNoneKeepsTheSandboxFromBefore(t *testing.T) {
	path := newPath(t)
	j := open(t, path)
	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "sb-old")))
	j.Observe(event(deletion.EventTracked, pu("uid-b", "web-1", "")))
	ifNone := func(p ports.PU) deletion.Event {
		ev := event(deletion.EventAdopted, p)
		ev.IfNone = true
		return ev
	}
	j.Observe(ifNone(pu("uid-a", "web-0", "sb-new")))
	j.Observe(ifNone(pu("uid-b", "web-1", "sb-1")))
	want := []ports.PU{pu("uid-a", "web-0", "sb-old"), pu("uid-b", "web-1", "sb-1")}
	assert.Equal(t, want, list(t, j), "the sandbox from before stays; one is filled where none is held")
	require.NoError(t, j.Close())
	assert.Equal(t, want, reopened(t, path))
}

func TestForget(t *testing.T) {
	for _, kind := range []deletion.EventKind{deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventUntracked} {
		t.Run(kind.String(), func(t *testing.T) {
			path := newPath(t)
			j := open(t, path)
			keep, gone := pu("uid-keep", "web-0", "sb-0"), pu("uid-gone", "web-1", "sb-1")
			j.Observe(event(deletion.EventTracked, keep))
			j.Observe(event(deletion.EventTracked, gone))

			j.Observe(deletion.Event{Kind: kind, PU: gone, Reason: ports.ReasonPodGone})
			j.Observe(deletion.Event{Kind: kind, PU: pu("uid-never", "web-2", "")})

			assert.Equal(t, []ports.PU{keep}, list(t, j))
			assert.Zero(t, j.Failures())
			require.NoError(t, j.Close())
			assert.Equal(t, []ports.PU{keep}, reopened(t, path))
		})
	}
}

// A forget is about the record the engine held: one replaced meanwhile by a
// Track for another pod or sandbox (the same PUID, a new PU) stays.
func TestForgetKeepsAReplacedRecord(t *testing.T) {
	j := open(t, newPath(t))
	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "sb-new")))
	j.Observe(event(deletion.EventTracked, pu("uid-b", "web-1", "sb-1")))
	j.Observe(event(deletion.EventTracked, pu("uid-c", "web-2", "")))

	j.Observe(event(deletion.EventDestroyed, pu("uid-a", "web-0", "sb-old")))
	j.Observe(event(deletion.EventDestroyed, pu("uid-b", "other", "sb-1")))
	j.Observe(event(deletion.EventDestroyed, pu("uid-c", "web-2", "sb-adopted")))

	assert.Equal(t, []ports.PU{pu("uid-a", "web-0", "sb-new"), pu("uid-b", "web-1", "sb-1")}, list(t, j),
		"uid-a's record is of another sandbox and uid-b's of another pod: kept; uid-c had no sandbox recorded "+
			"(its adoption was not written): forgotten")
}

// A PU the engine tracked without its sandbox (an informer's add after a
// restart) and destroyed before any list told it the recorded one is the
// record's PU: forgotten, or the next list would bring it back to be
// destroyed again (ports.PU.SameAs).
func TestForgetAPUDestroyedWithoutTheSandboxRecorded(t *testing.T) {
	j := open(t, newPath(t))
	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "sb-1")))
	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", ""))) // keeps sb-1
	j.Observe(event(deletion.EventDestroyed, pu("uid-a", "web-0", "")))
	assert.Empty(t, list(t, j))
}

func TestOtherEventsAreIgnored(t *testing.T) {
	j := open(t, newPath(t))
	p := pu("uid-a", "web-0", "sb-0")
	j.Observe(event(deletion.EventTracked, p))
	before := commits(t, j)
	for _, kind := range []deletion.EventKind{
		deletion.EventChecked, deletion.EventGetFailed, deletion.EventDestroyFailed,
		deletion.EventVetoed, deletion.EventRestored, deletion.EventKind(0), deletion.EventKind(200),
	} {
		j.Observe(event(kind, pu("uid-a", "other", "sb-x")))
		j.Observe(deletion.Event{Kind: kind})
	}
	assert.Equal(t, before, commits(t, j))
	assert.Equal(t, []ports.PU{p}, list(t, j))
	assert.Zero(t, j.Failures())
}

// Many Tracks at once: every one is on disk when its Observe returns, and
// they share commits.
func TestConcurrentTracksAreDurableAndShareCommits(t *testing.T) {
	path := newPath(t)
	j, err := Open(path, Options{Logger: quiet()})
	require.NoError(t, err)
	const goroutines, each = 32, 16
	before := commits(t, j)

	var start, wg sync.WaitGroup
	start.Add(1)
	want := make([]ports.PU, 0, goroutines*each)
	for g := range goroutines {
		for i := range each {
			want = append(want, pu(fmt.Sprintf("uid-%02d-%02d", g, i), fmt.Sprintf("pod-%d-%d", g, i), fmt.Sprintf("sb-%d", g)))
		}
		wg.Go(func() {
			start.Wait()
			for i := range each {
				j.Observe(event(deletion.EventTracked, want[g*each+i]))
			}
		})
	}
	start.Done()
	wg.Wait()

	n := commits(t, j) - before
	t.Logf("%d PUs written in %d commits", len(want), n)
	assert.Less(t, n, len(want)/2, "concurrent Tracks share commits")
	assert.Zero(t, j.Failures())
	require.NoError(t, j.Close())
	assert.Equal(t, want, reopened(t, path))
}

func TestObserveBadInput(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs.WriteString(args + "\n")
	}, funcr.Options{})
	j, err := Open(newPath(t), Options{Logger: log})
	require.NoError(t, err)
	defer func() { require.NoError(t, j.Close()) }()
	before := commits(t, j)

	bad := []ports.PU{
		{},
		{Pod: types.NamespacedName{Namespace: "ns", Name: "web"}},
		{PUID: "uid-a", Pod: types.NamespacedName{Namespace: "ns"}},
		{PUID: "uid-a", Pod: types.NamespacedName{Name: "web"}},
	}
	for _, p := range bad {
		for _, kind := range []deletion.EventKind{deletion.EventTracked, deletion.EventAdopted, deletion.EventDestroyed} {
			assert.NotPanics(t, func() { j.Observe(event(kind, p)) })
		}
	}

	assert.Equal(t, before, commits(t, j), "nothing written")
	assert.Empty(t, list(t, j))
	assert.Equal(t, uint64(3*len(bad)), j.Failures(), "each is counted")
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "without a PUID, pod name or namespace")
}

func TestAfterClose(t *testing.T) {
	j, err := Open(newPath(t), Options{Logger: quiet()})
	require.NoError(t, err)
	require.NoError(t, j.Close())

	assert.NotPanics(t, func() { j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", ""))) })
	assert.Equal(t, uint64(1), j.Failures(), "a write after Close is a counted failure")
	_, err = j.ListPUs(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
}

func TestListPUsHonoursItsContext(t *testing.T) {
	j := open(t, newPath(t))
	j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := j.ListPUs(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

// quiet drops every log line. (logr.Discard() has no sink, which the
// journal and the engine take for "use klog".)
func quiet() logr.Logger { return funcr.New(func(_, _ string) {}, funcr.Options{}) }
