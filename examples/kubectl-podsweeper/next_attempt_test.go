package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md: explain pod tells a PU's "failed destroy attempts and the next". A PU of a gone pod waiting for its
// turn under the destroy rate has failed no attempt, and its next attempt is told all the same.
func TestExplainPodTellsTheNextAttemptOfAPUWaitingForItsTurn(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	next := now.Add(40 * time.Second)
	x := &PodExplanation{Now: now, Namespace: "apps", Name: "web", Events: []Event{}, Answers: []Answer{{
		Program: Program{Program: "node-agent", Release: "podsweeper", Namespace: "podsweeper", Pod: "na-x", Node: "node-a"},
		PUs:     []k8s.PUStatus{{PUID: firstUID, Pod: "apps/web", State: "waiting for its turn", Age: "1m0s", NextAttempt: &next}},
	}}}
	var b bytes.Buffer
	if err := RenderPod(&b, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "next attempt  in 40s") {
		t.Errorf("the text does not tell the next attempt of a PU waiting for its turn:\n%s", b.String())
	}
}
