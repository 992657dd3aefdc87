package deletiontest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

// recordingT is failures whose Cleanup keeps the functions for end, as
// testing runs them when a test ends.
type recordingT struct {
	failures
	cleanups []func()
}

func (r *recordingT) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recordingT) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// end runs the cleanups, last first.
func (r *recordingT) end() {
	r.mu.Lock()
	fs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// sweepUnexpectedDestroy sweeps a PU of a gone pod whose DestroyPU no mock
// expects, with gomock reporting to reporter, and returns how long the Sweep
// took.
func sweepUnexpectedDestroy(t *testing.T, reporter gomock.TestReporter) time.Duration {
	ctrl := gomock.NewController(reporter)
	getter, policy := mocks.NewMockPodGetter(ctrl), mocks.NewMockPolicyHandler(ctrl)
	getter.EXPECT().GetPod(gomock.Any(), web).Return(nil, ports.ErrPodNotFound).AnyTimes()
	engine := deletiontest.NewEngine(t, getter, policy, deletion.Options{})
	require.NoError(t, engine.Track(ports.PU{PUID: "uid-1", Pod: web}))
	start := time.Now()
	engine.Sweep(context.Background())
	return time.Since(start)
}

// TestMockReporterFailsTheTestAtOnceAndTheEngineGoesOn: an unexpected call
// that a mock gets in one of the engine's goroutines fails the test at once
// through MockReporter, and the Sweep returns without waiting: the check
// ends, its failure kept for a retry. Given the test's T itself, the same
// call ends the engine's goroutine mid-check, and the Sweep waits for it as
// for a check stuck in a port: CheckTimeout and a second.
func TestMockReporterFailsTheTestAtOnceAndTheEngineGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingT{}
		took := sweepUnexpectedDestroy(t, deletiontest.NewMockReporter(rec))
		require.Len(t, rec.messages(), 1, "the unexpected DestroyPU is reported once")
		assert.Contains(t, rec.messages()[0], "Unexpected call")
		assert.Less(t, took, time.Second, "the Sweep does not wait for the check")
	})
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingT{}
		took := sweepUnexpectedDestroy(t, rec)
		require.Len(t, rec.messages(), 1)
		assert.GreaterOrEqual(t, took, deletion.DefaultCheckTimeout, "the T itself: the check's goroutine ended, the Sweep waited")
	})
}

// TestMockReporterReportsAnExpectedCallThatNeverCame: MockReporter has the
// T's Cleanup, through which gomock checks, when the test ends, the calls it
// expected and never got.
func TestMockReporterReportsAnExpectedCallThatNeverCame(t *testing.T) {
	rec := &recordingT{}
	ctrl := gomock.NewController(deletiontest.NewMockReporter(rec))
	policy := mocks.NewMockPolicyHandler(ctrl)
	policy.EXPECT().DestroyPU(gomock.Any(), gomock.Any())
	require.Empty(t, rec.messages())
	rec.end()
	assert.NotEmpty(t, rec.messages(), "the missing DestroyPU is reported when the test ends")
}
