package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podsweeper/podsweeper/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer

	res, err := runStory(ctx, &out)

	require.NoError(t, err)
	assert.Empty(t, res.Check(), "output:\n%s", out.String())
	assert.Less(t, res.Elapsed, 5*time.Second)
	assert.Equal(t, 4, res.GetFailures, "every PU alive during the outage is checked once and kept")
	assert.Contains(t, out.String(), "DESTROY  PU uid-worker-0-a   pod shop/worker-0     PodGone")
	assert.Contains(t, out.String(), "PUs destroyed:     5 (PodGone 2, NodeChanged 1, UIDChanged 1, SandboxChanged 1)")
	assert.Contains(t, out.String(), "during the outage: 0 destroyed, 4 failed reads kept their PU")
}

func TestCheckCatchesAWrongStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	good, err := runStory(ctx, &out)
	require.NoError(t, err)
	require.Empty(t, good.Check())

	outage := good
	outage.DestroysInStep = map[string]int{good.outageStepTitle: 1}
	assert.NotEmpty(t, outage.Check(), "a destroy during the outage must fail the story")

	missing := good
	missing.Destroys = good.Destroys[1:]
	assert.NotEmpty(t, missing.Check(), "a missing destroy must fail the story")

	wrongReason := good
	wrongReason.Destroys = append([]Destroy(nil), good.Destroys...)
	wrongReason.Destroys[0].Reason = ports.ReasonUIDChanged
	assert.NotEmpty(t, wrongReason.Check(), "a wrong reason must fail the story")

	noRequeue := good
	noRequeue.Requeued = nil
	assert.NotEmpty(t, noRequeue.Check(), "a missing requeue must fail the story")

	leaked := good
	leaked.StillTracked = good.StillTracked[1:]
	assert.NotEmpty(t, leaked.Check(), "a wrong set of tracked PUs must fail the story")
}
