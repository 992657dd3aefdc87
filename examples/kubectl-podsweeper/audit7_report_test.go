package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// report: the node agent, whose command line says --dry-run, could not be
// asked (it restarts: 503); the cluster controller's dry run has reported
// nothing yet. The table says "(none: no dry run would destroy anything
// yet)": a claim of every dry run, the one not asked among them, whose
// reports are not known.
func TestAuditXReportNeverSaysNoDryRunWouldDestroyWhenOneCouldNotBeAsked(t *testing.T) {
	now := time.Now().UTC()
	r := &Report{Now: now, Answers: []Answer{
		{Program: Program{Program: "cluster-controller", Namespace: "podsweeper", Pod: "cc-abcde", DryRun: true}, At: now, ReportsAt: now},
		{Program: Program{Program: "node-agent", Namespace: "podsweeper", Pod: "agent-x7k2p", Node: "node-a", DryRun: true},
			Error: "reading its status on port 8084: /debug/podsweeper answered 503: the deletion engine has not listed its Inventory yet"},
	}}
	var b bytes.Buffer
	if err := RenderReport(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "no dry run would destroy anything") {
		t.Fatalf("says no dry run would destroy anything while a program in a dry run could not be asked:\n%s", b.String())
	}
}
