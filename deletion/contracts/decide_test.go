package contracts_test

import (
	"testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// deletion.Decide (deletion/decide.go:165-167, go doc): "8. Same UID, no current sandbox: Keep (so when the prober fails
// or is none)", and row 12 needs "the SandboxProber says the entry's is dead"; Observation.HasProber is "a
// SandboxProber is configured" (decide.go:29). An Observation with no prober (HasProber false) whose
// ProberAsked and SandboxDead are set (an adapter's stale or zero-filled fields) destroys by row 12.
func TestDecideKeepsRowEightWithoutAProber(t *testing.T) {
	pu := ports.PU{PUID: "uid-a", Pod: key("a"), SandboxID: "s1"}
	o := deletion.Observation{Pod: pod("a", "uid-a"), NodeName: node, HasExtractor: true, SandboxAsked: true,
		SandboxID: "", HasProber: false, ProberAsked: true, SandboxDead: true}
	v := deletion.Decide(pu, o)
	t.Logf("%v", v)
	if v.Action != deletion.Keep || v.Row != 8 {
		t.Fatalf("no SandboxProber (HasProber false): row 8, Keep; got %v", v)
	}
}
