package deletion_test

// A new user's mistakes get an error, not a crash.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/deletion"
)

// TestTrackOnAZeroEngineReturnsErrNotCreated: an Engine not made by New
// (deletion.Engine{}) answers Track with an error wrapping ErrNotCreated
// instead of a nil pointer dereference.
func TestTrackOnAZeroEngineReturnsErrNotCreated(t *testing.T) {
	c := &deletion.Engine{}
	var err error
	require.NotPanics(t, func() { err = c.Track(pu("a")) })
	assert.ErrorIs(t, err, deletion.ErrNotCreated)
}
