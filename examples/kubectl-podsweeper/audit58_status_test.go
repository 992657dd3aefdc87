package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:33: "`-o json` prints what the text is made from"; main.go's status help: "every PU of the programs on a
// node: its pod, its state, its last check's row and why, its attempts, its next attempt and what a dry run would
// do"; explain.md:84-85: "A dry run's report of a PU still on the status page is told under that PU (`reported it
// would destroy it`): what the dry run did last". A node agent in a dry run holds one PU; its report page, read right
// after its status page, reports it would destroy it (PodGone). The JSON says the program is in a dry run and its
// report; the text's row says "-" under DRY RUN, as for a program that is in none and reports nothing, and no line
// says that it is in a dry run.
func TestAuditStatusDryRunSaysSo58(t *testing.T) {
	pu := idlePU(firstUID, "apps/web")
	at := clockNow.Add(-time.Second).Format(time.RFC3339Nano)
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a": servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{
			k8s.StatusPath: {code: 200, body: mustJSON(t, []k8s.PUStatus{pu})},
			k8s.DryRunPath: {code: 200, body: `{"total":1,"reports":[{"at":"` + at + `","puID":"` + firstUID + `","pod":"apps/web","reason":"PodGone","row":1,"why":"pod not found"}]}`},
		}),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning, "--dry-run"))
	s, err := c.status(testContext(t), "node-a", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := RenderStatus(&txt, s); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	wantSays(t, "the JSON", js.String(), `"dryRun": true`)
	wantSays(t, "the JSON", js.String(), `"reason": "PodGone"`)
	if !strings.Contains(txt.String(), "PodGone") {
		t.Errorf("the text does not say the dry run's report of the PU (PodGone), which the JSON holds:\n%s", txt.String())
	}
}
