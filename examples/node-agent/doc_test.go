package main

import (
	"bytes"
	"flag"
	"github.com/podsweeper/podsweeper/examples/node-agent/agent"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

// TestDocSaysWhatHelpSays: doc.go names every flag -h lists, no other,
// and gives each flag its default in the synopsis.
func TestDocSaysWhatHelpSays(t *testing.T) {
	var help bytes.Buffer
	_, err := agent.ParseFlags([]string{"-h"}, func(string) string { return "" }, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	testkube.CheckDocSaysWhatHelpSays(t, "doc.go", help.String())
}
