package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The harness holds: one cni-gc, whose sweep read the reservations, and
// nothing holds the address: "knows nothing".
func TestAuditXHoldsExplainIPUnknownAddress(t *testing.T) {
	at := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-bbbb": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","reservationsRead":"` + at.Add(-12*time.Second).Format(time.RFC3339Nano) + `"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 5*time.Second, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", at)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RenderIP(&out, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "cni-gc knows nothing of this address.") {
		t.Fatalf("harness: want knows nothing, got:\n%s", out.String())
	}
}

// Two cni-gc on the node (a rollout's surge, or two releases): the first
// could not be asked (it answers slowly, past --timeout: it runs, with its
// frees and decisions in memory), the second answers
// that nothing holds the address. Each cni-gc keeps its own latest frees and
// decisions: the one not asked may have freed it. The plugin must not say
// cni-gc knows nothing of the address, and must say the first could not be
// asked.
func TestAuditXExplainIPNeverKnowsNothingWhenACNIGCCouldNotBeAsked(t *testing.T) {
	at := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-aaaa": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","freed":[{"at":"2026-01-01T00:00:00Z","reservation":true,"network":"podnet","containerID":"c0ffee","ifName":"eth0","decision":{"at":"2026-01-01T00:00:00Z","row":18,"why":"x","verdict":"free"}}]}`, delay: 3 * time.Second},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
		"kube-system/cni-gc-bbbb": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","reservationsRead":"` + at.Add(-12*time.Second).Format(time.RFC3339Nano) + `"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 1*time.Second,
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-aaaa", "node-a"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", at)
	if err != nil {
		t.Fatal(err)
	}
	var out, js bytes.Buffer
	if err := RenderIP(&out, x); err != nil {
		t.Fatal(err)
	}
	if err := RenderIPJSON(&js, x); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "knows nothing") {
		t.Errorf("says cni-gc knows nothing of the address while cni-gc-aaaa on that node could not be asked:\n%s", text)
	}
	if !strings.Contains(text, "cni-gc-aaaa") {
		t.Errorf("the text does not name cni-gc-aaaa, which could not be asked:\n%s", text)
	}
	var v map[string]any
	_ = json.Unmarshal(js.Bytes(), &v)
	if !strings.Contains(js.String(), "cni-gc-aaaa") {
		t.Errorf("the JSON does not name cni-gc-aaaa, which could not be asked:\n%s", js.String())
	}
}

// cni-gc just restarted: its sweep has not read host-local's reservations
// yet (reservationsRead absent: "none has run, or none could read them"),
// and no attachment of libcni's cache holds the address. A leaked
// reservation of it may be on disk: what holds it is not known. The plugin
// says so in a parenthesis, then concludes "cni-gc knows nothing of this
// address", as for an address the sweep read and found no one holding;
// what cni-gc could not read (Unread) makes it say it cannot tell instead.
func TestAuditXExplainIPNeverKnowsNothingBeforeTheSweepRead(t *testing.T) {
	at := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-bbbb": rawPages{at: at, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 5*time.Second, runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", at)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RenderIP(&out, x); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "no round of the sweep has read") && strings.Contains(out.String(), "knows nothing of this address") {
		t.Fatalf("says cni-gc knows nothing of the address while no round of its sweep has read host-local's reservations:\n%s", out.String())
	}
}

// A second cni-gc asked in turn is told on its own clock, from its own page.
func TestAuditXHoldsExplainIPSecondCNIGCClock(t *testing.T) {
	now := time.Now().UTC()
	progNow := now.Add(-time.Hour)
	read := progNow.Add(-12 * time.Second).Format(time.RFC3339Nano)
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"kube-system/cni-gc-aaaa": rawPages{at: now, pages: map[string]rawAnswer{
			addressPath: {code: 503, body: "restarting"},
		}},
		"kube-system/cni-gc-bbbb": rawPages{at: progNow, pages: map[string]rawAnswer{
			addressPath:         {code: 200, body: `{"ip":"10.88.0.13","reservationsRead":"` + read + `"}`},
			"/debug/podsweeper": {code: 200, body: `[]`},
		}},
	}, 5*time.Second,
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-aaaa", "node-a"),
		runningProgram("podsweeper-cni-gc", "kube-system", "cni-gc-bbbb", "node-a"))
	x, err := c.explainIP(context.Background(), "10.88.0.13", "node-a", now)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RenderIP(&out, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "as the sweep 12s ago read them") {
		t.Fatalf("got:\n%s", out.String())
	}
}
