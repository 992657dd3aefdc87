package testcontainerd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A container's log as the kubelet writes it: a line in parts (P) is read
// as one, and the line still being written (no newline yet) is left for
// the next read.
func TestReadCRILog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	require.NoError(t, os.WriteFile(path, []byte(
		"2026-12-02T07:00:00.000000001Z stderr F first line\n"+
			"2026-12-02T07:00:01.5Z stdout P a long \n"+
			"2026-12-02T07:00:01.6Z stdout F line\n"+
			"2026-12-02T07:00:02Z stderr F not finished"), 0o644))
	lines := readCRILog(t, path)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, []LogLine{
		{Time: at("2026-12-02T07:00:00.000000001Z"), Stream: "stderr", Text: "first line"},
		{Time: at("2026-12-02T07:00:01.6Z"), Stream: "stdout", Text: "a long line"},
	}, lines)
	assert.Empty(t, readCRILog(t, filepath.Join(t.TempDir(), "none.log")), "no file yet: no lines")
}
