package cni

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The freeing decision, row by row, as decide's doc comment and
// docs/sdk/cni-freeing.md tell it: each case is one row, with the verdict
// and the sandbox's state that row gives.
func TestDecideRowByRow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	gone := []attFacts{{NetNS: nsGone}}
	present := []attFacts{{NetNS: nsPresent}}
	unknown := []attFacts{{NetNS: nsUnknown}}
	// sb is the sandbox decided on, always first; others follow.
	for _, tc := range []struct {
		name    string
		changed bool
		asked   bool
		sb      sandboxFacts
		others  []sandboxFacts
		row     int
		act     action
		state   sandboxState
	}{
		{name: "sandbox change, only disableGC networks cached", changed: true, asked: true,
			sb: sandboxFacts{ID: "s", Listed: true, Atts: []attFacts{{NetNS: nsGone, Never: true}}}, row: 0, act: keep, state: stateDead},
		{name: "sandbox change, nothing of it cached", changed: true, asked: true,
			sb: sandboxFacts{ID: "s", Listed: true}, row: 0, act: keep, state: stateDead},
		{name: "listed ready, pod gone", asked: true,
			sb: sandboxFacts{ID: "s", Listed: true, Ready: true, Atts: gone}, row: 1, act: keep, state: stateReady},
		{name: "listed ready, sandbox change, a later one cached", changed: true, asked: true,
			sb:     sandboxFacts{ID: "s", Listed: true, Ready: true, Atts: unknown, Created: t0},
			others: []sandboxFacts{{ID: "later", Atts: unknown, Created: t0.Add(time.Hour)}}, row: 1, act: keep, state: stateReady},
		{name: "pod gone, stopped, another sandbox listed ready", asked: true,
			sb:     sandboxFacts{ID: "s", Listed: true, Atts: gone},
			others: []sandboxFacts{{ID: "current", Listed: true, Ready: true}}, row: 2, act: keep, state: stateDead},
		{name: "pod gone, namespace gone, another sandbox being created", asked: true,
			sb:     sandboxFacts{ID: "s", Atts: gone},
			others: []sandboxFacts{{ID: "new", Atts: present}}, row: 2, act: keep, state: stateDead},
		{name: "pod gone, listed stopped, its namespace there", asked: true,
			sb: sandboxFacts{ID: "s", Listed: true, Atts: present}, row: 3, act: free, state: stateDead},
		{name: "sandbox change, listed stopped", changed: true, asked: true,
			sb: sandboxFacts{ID: "s", Listed: true, Atts: unknown}, row: 3, act: free, state: stateDead},
		{name: "pod gone, not listed, namespace gone", asked: true,
			sb: sandboxFacts{ID: "s", Atts: []attFacts{{NetNS: nsUnknown}, {NetNS: nsGone}}}, row: 4, act: free, state: stateDead},
		{name: "pod gone, not listed, its attachments disagree: one namespace gone, one there (may be being created)", asked: true,
			sb: sandboxFacts{ID: "s", Atts: []attFacts{{NetNS: nsPresent}, {NetNS: nsGone}}}, row: 9, act: refuse, state: stateCreating},
		{name: "pod gone, no runtime, its attachments disagree: one namespace gone, one there",
			sb: sandboxFacts{ID: "s", Atts: []attFacts{{NetNS: nsGone}, {NetNS: nsPresent}}}, row: 5, act: keep, state: stateUnknown},
		{name: "sandbox change, no runtime, its attachments disagree: one namespace gone, one there", changed: true,
			sb: sandboxFacts{ID: "s", Atts: []attFacts{{NetNS: nsGone}, {NetNS: nsPresent}}}, row: 7, act: refuse, state: stateUnknown},
		{name: "pod gone, no runtime, namespace gone",
			sb: sandboxFacts{ID: "s", Atts: gone}, row: 4, act: free, state: stateDead},
		{name: "pod gone, no runtime, namespace gone, an entry not used (a link) names one that is there",
			sb: sandboxFacts{ID: "s", Atts: gone, Unused: []nsState{nsPresent}}, row: 5, act: keep, state: stateUnknown},
		{name: "pod gone, no runtime, namespace unknown, an entry not used names one that is gone",
			sb: sandboxFacts{ID: "s", Atts: unknown, Unused: []nsState{nsGone}}, row: 4, act: free, state: stateDead},
		{name: "sandbox change, no runtime, namespace gone", changed: true,
			sb: sandboxFacts{ID: "s", Atts: gone}, row: 4, act: free, state: stateDead},
		{name: "pod gone, no runtime, namespace there (a static pod without its mirror)",
			sb: sandboxFacts{ID: "s", Atts: present}, row: 5, act: keep, state: stateUnknown},
		{name: "pod gone, no runtime, namespace unknown",
			sb: sandboxFacts{ID: "s", Atts: unknown, Expired: true}, row: 5, act: keep, state: stateUnknown},
		{name: "sandbox change, a later sandbox cached", changed: true, asked: true,
			sb:     sandboxFacts{ID: "s", Atts: present, Created: t0},
			others: []sandboxFacts{{ID: "later", Atts: unknown, Created: t0.Add(time.Second)}}, row: 6, act: free, state: stateCreating},
		{name: "sandbox change, a later sandbox listed only", changed: true, asked: true,
			sb:     sandboxFacts{ID: "s", Atts: unknown, Created: t0},
			others: []sandboxFacts{{ID: "later", Listed: true, Ready: true, Created: t0.Add(time.Second)}}, row: 6, act: free, state: stateUnknown},
		{name: "sandbox change, a later sandbox cached, a running one listed without an ID (it may be this one)", changed: true, asked: true,
			sb:     sandboxFacts{ID: "s", Atts: unknown, Created: t0},
			others: []sandboxFacts{{ID: "later", Atts: unknown, Created: t0.Add(time.Second)}, {Listed: true, Ready: true}}, row: 7, act: refuse, state: stateUnknown},
		{name: "sandbox change, another created at the same instant", changed: true, asked: true,
			sb:     sandboxFacts{ID: "s", Atts: unknown, Created: t0},
			others: []sandboxFacts{{ID: "twin", Atts: unknown, Created: t0}}, row: 7, act: refuse, state: stateUnknown},
		{name: "sandbox change, no runtime, a later sandbox cached", changed: true,
			sb:     sandboxFacts{ID: "s", Atts: present, Created: t0},
			others: []sandboxFacts{{ID: "later", Atts: unknown, Created: t0.Add(time.Hour)}}, row: 7, act: refuse, state: stateUnknown},
		{name: "sandbox change, refused for NewestSandboxTimeout", changed: true, asked: true,
			sb: sandboxFacts{ID: "s", Atts: present, Expired: true}, row: 8, act: giveUp, state: stateCreating},
		{name: "pod gone, may be being created", asked: true,
			sb: sandboxFacts{ID: "s", Atts: present}, row: 9, act: refuse, state: stateCreating},
		{name: "pod gone, may be being created, beside a ready one", asked: true,
			sb:     sandboxFacts{ID: "s", Atts: present},
			others: []sandboxFacts{{ID: "current", Listed: true, Ready: true}}, row: 9, act: refuse, state: stateCreating},
		{name: "pod gone, not listed, namespace there for NewestSandboxTimeout", asked: true,
			sb: sandboxFacts{ID: "s", Atts: present, Expired: true}, row: 10, act: free, state: stateCreating},
		{name: "pod gone, not listed, namespace tells nothing", asked: true,
			sb: sandboxFacts{ID: "s", Atts: unknown}, row: 11, act: free, state: stateUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := podFacts{Changed: tc.changed, Asked: tc.asked, Sandboxes: append([]sandboxFacts{tc.sb}, tc.others...)}
			got := decide(p)
			require.Len(t, got, len(p.Sandboxes))
			v := got[0]
			require.Equal(t, tc.row, v.Row, "row (%s)", v.why())
			require.Equal(t, tc.act, v.Action, "action")
			require.Equal(t, tc.state, v.State, "state")
			require.Equal(t, "s", v.ID)
			for j, a := range tc.sb.Atts {
				require.Equal(t, tc.act == free && !a.Never, v.Del[j], "DEL of attachment %d", j)
			}
		})
	}
}

// Whatever the row, an attachment of a disableGC network is never DELed,
// beside one of the same sandbox that is.
func TestDecideNeverDELsADisableGCNetwork(t *testing.T) {
	for _, changed := range []bool{false, true} {
		v := decide(podFacts{Changed: changed, Asked: true, Sandboxes: []sandboxFacts{
			{ID: "s", Listed: true, Atts: []attFacts{{Never: true}, {}}},
		}})[0]
		require.Equal(t, 3, v.Row)
		require.Equal(t, []bool{false, true}, v.Del, "changed=%t", changed)
	}
}

// FuzzDecide holds what decide promises whatever the collector read:
//
//   - no sandbox the Runtime lists ready is freed;
//   - no sandbox the Runtime may be creating (not listed, its network
//     namespace there) is freed, but for a sandbox change once a sandbox
//     of the pod was created later, or, its pod gone, once it has been
//     refused for NewestSandboxTimeout;
//   - without a Runtime, nothing is freed but a sandbox whose network
//     namespace is gone;
//   - a gone pod of which a sandbox is listed ready, or may be being
//     created and refused for less than NewestSandboxTimeout, keeps every
//     sandbox;
//   - an attachment of a disableGC network is never DELed, and only a
//     sandbox decide frees has any DELed;
//   - no host-local reservation of a sandbox the Runtime lists, ready or
//     not, or that the cache holds an attachment of, is freed
//     (decideReservation, asked of a reservation of each sandbox, as the
//     collector reads them together).
func FuzzDecide(f *testing.F) {
	f.Add(false, false, []byte{0x08, 0x01, 0})                        // gone pod, no runtime, namespace there
	f.Add(false, true, []byte{0x03, 0x02, 1, 0x08, 0x01, 0})          // gone pod, one ready, one being created
	f.Add(true, true, []byte{0x08, 0x01, 1, 0x00, 0x00, 4})           // sandbox change, a later one
	f.Add(false, true, []byte{0x0c, 0x01, 0, 0x08, 0x00, 0})          // gone pod, creating expired
	f.Add(true, false, []byte{0x08, 0x02, 0, 0x29, 0x00, 3})          // disableGC
	f.Add(false, true, []byte{0x18, 0x09, 0, 0x11, 0x00, 0, 0x08, 0}) // several attachments
	f.Add(true, false, []byte{0x08, 0x01, 0})                         // sandbox change, no runtime, namespace there
	f.Add(true, true, []byte{0x08, 0x01, 1, 0x08, 0x00, 1})           // sandbox change, may be being created, a twin
	f.Add(false, true, []byte{0x03, 0x00, 1, 0x09, 0x00, 0})          // gone pod, one ready, one stopped
	f.Add(true, false, []byte{0x08, 0x01, 1, 0x08, 0x00, 4})          // sandbox change, no runtime, a later one
	f.Add(false, false, []byte{0x08, 0x42, 0})                        // gone pod, no runtime, namespace gone, a link's there
	f.Add(true, true, []byte{0x08, 0x01, 1, 0x08, 0x00, 4, 0})        // sandbox change, a later one, a running one without an ID
	f.Fuzz(func(t *testing.T, changed, asked bool, raw []byte) {
		p := podFacts{Changed: changed, Asked: asked}
		for i := 0; i+3 <= len(raw) && len(p.Sandboxes) < 6; i += 3 {
			flags, ns, created := raw[i], raw[i+1], raw[i+2]
			s := sandboxFacts{ID: fmt.Sprintf("s%d", len(p.Sandboxes)), Listed: asked && flags&1 != 0, Expired: flags&4 != 0,
				Contested: flags&0x80 != 0}
			s.Ready = s.Listed && flags&2 != 0
			if created != 0 {
				s.Created = time.Unix(int64(created), 0)
				if created%4 != 0 { // listed at two times: the earliest is before Created
					s.Earliest = s.Created.Add(-time.Duration(created%4) * 2 * time.Second)
				}
			}
			for j := range int(flags>>3) & 3 {
				s.Atts = append(s.Atts, attFacts{NetNS: nsState(ns>>(2*j)) & 3 % 3, Never: flags&(0x20<<j) != 0})
			}
			if ns>>6 != 0 { // an entry of it not used (a link), its namespace there, gone or unknown
				s.Unused = []nsState{nsState(ns>>6) % 3}
			}
			p.Sandboxes = append(p.Sandboxes, s)
		}
		cached := len(p.Sandboxes)
		noID := asked && len(raw)%3 == 1 // a trailing byte: the runtime lists a running sandbox of the pod without an ID
		if noID {
			p.Sandboxes = append(p.Sandboxes, sandboxFacts{Listed: true, Ready: true})
		}
		vs := decide(p)
		if len(vs) != len(p.Sandboxes) {
			t.Fatalf("%d verdicts for %d sandboxes", len(vs), len(p.Sandboxes))
		}
		for i, s := range p.Sandboxes[:cached] {
			age := time.Duration(raw[3*i+2]) * 10 * time.Minute // its created byte, as tens of minutes since the reservation
			r := reservationFacts{ContainerID: s.ID, Config: true, Asked: asked, Listed: s.Listed, Cached: len(s.Atts) > 0,
				Age: age, Grace: DefaultReservationGrace}
			if v := decideReservation(r); v.Action == free && (s.Listed || len(s.Atts) > 0) {
				t.Fatalf("row %d frees the reservation of %s, which the runtime lists or the cache holds: %+v", v.Row, s.ID, s)
			}
		}
		podRuns := false
		for _, s := range p.Sandboxes {
			podRuns = podRuns || s.Ready || asked && !s.Listed && nsOf(s, nsPresent) && !s.Expired
		}
		for i, v := range vs {
			s := p.Sandboxes[i]
			freed := v.Action == free
			creating := asked && !s.Listed && nsOf(s, nsPresent) // whatever its other attachments say
			switch {
			case v.ID != s.ID || len(v.Del) != len(s.Atts):
				t.Fatalf("verdict %+v for sandbox %+v", v, s)
			case freed && s.Ready:
				t.Fatalf("row %d frees %s, listed ready: %+v", v.Row, s.ID, p)
			case freed && creating && !(changed && later(p.Sandboxes, s)) && !(!changed && s.Expired):
				t.Fatalf("row %d frees %s, which the runtime may be creating: %+v", v.Row, s.ID, p)
			case freed && !asked && (!nsOf(s, nsGone) || nsOf(s, nsPresent)):
				t.Fatalf("row %d frees %s without a runtime, its namespace not gone: %+v", v.Row, s.ID, p)
			case freed && !changed && podRuns:
				t.Fatalf("row %d frees %s of a pod the runtime runs: %+v", v.Row, s.ID, p)
			case freed && noID && !s.Listed && stateOf(s, asked) != stateDead && !(!changed && s.Expired):
				t.Fatalf("row %d frees %s, which may be the running sandbox listed without an ID: %+v", v.Row, s.ID, p)
			}
			for j, del := range v.Del {
				if del && (!freed || s.Atts[j].Never) {
					t.Fatalf("row %d DELs attachment %d of %s (action %d, disableGC %t)", v.Row, j, s.ID, v.Action, s.Atts[j].Never)
				}
			}
		}
	})
}

// nsOf reports whether an attachment of s, or an entry of it not used,
// has its network namespace in state ns.
func nsOf(s sandboxFacts, ns nsState) bool {
	if slices.Contains(s.Unused, ns) {
		return true
	}
	for _, a := range s.Atts {
		if a.NetNS == ns {
			return true
		}
	}
	return false
}

// later reports whether a sandbox among sbs was created after s.
func later(sbs []sandboxFacts, s sandboxFacts) bool {
	for _, o := range sbs {
		first := o.Created
		if !o.Earliest.IsZero() && o.Earliest.Before(first) {
			first = o.Earliest
		}
		if !o.Contested && first.After(s.Created) {
			return true
		}
	}
	return false
}

// A host-local reservation, row by row (12 to 18 of decide's table): each
// case is one row, with its verdict.
func TestDecideReservationRowByRow(t *testing.T) {
	grace := 5 * time.Minute
	old := reservationFacts{ContainerID: "c", Config: true, Asked: true, Age: time.Hour, Grace: grace}
	with := func(f func(*reservationFacts)) reservationFacts { r := old; f(&r); return r }
	for _, tc := range []struct {
		name   string
		r      reservationFacts
		row    int
		act    action
		reason string
	}{
		{name: "its network's config is gone", r: with(func(r *reservationFacts) { r.Config = false }), row: 12, act: report, reason: ReasonConfigGone},
		{name: "config gone, even with no runtime", r: with(func(r *reservationFacts) { r.Config, r.Asked = false, false }), row: 12, act: report, reason: ReasonConfigGone},
		{name: "its network says disableGC", r: with(func(r *reservationFacts) { r.Never = true }), row: 13, act: keep},
		{name: "no runtime to ask", r: with(func(r *reservationFacts) { r.Asked = false }), row: 14, act: keep},
		{name: "the runtime lists its sandbox", r: with(func(r *reservationFacts) { r.Listed = true }), row: 15, act: keep},
		{name: "listed, young, cached", r: with(func(r *reservationFacts) { r.Listed, r.Cached, r.Age = true, true, 0 }), row: 15, act: keep},
		{name: "a cache entry names its sandbox", r: with(func(r *reservationFacts) { r.Cached = true }), row: 16, act: keep},
		{name: "its DEL would remove a file never touched", r: with(func(r *reservationFacts) { r.Untouched = true }), row: 16, act: keep},
		{name: "younger than the grace", r: with(func(r *reservationFacts) { r.Age = grace - time.Nanosecond }), row: 17, act: keep},
		{name: "reserved in the future", r: with(func(r *reservationFacts) { r.Age = -time.Hour }), row: 17, act: keep},
		{name: "no sandbox, no cache entry, as old as the grace", r: with(func(r *reservationFacts) { r.Age = grace }), row: 18, act: free, reason: ReasonNoSandbox},
		{name: "no sandbox, no cache entry, old", r: old, row: 18, act: free, reason: ReasonNoSandbox},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decideReservation(tc.r)
			require.Equal(t, tc.row, v.Row, "row (%s)", v.why())
			require.Equal(t, tc.act, v.Action, "action")
			require.Equal(t, tc.reason, reasonOf(v), "reason")
			require.Equal(t, "c", v.ID)
		})
	}
}

// FuzzDecideReservation holds what decideReservation promises whatever
// the collector read: no reservation of a sandbox the Runtime lists, or
// whose cache entry exists, is ever freed; nor one whose DEL would remove
// a file never touched; nor one without a Runtime to ask, younger than the
// grace (its container's youngest reservation in the network), of a disableGC network, or whose network's
// config is gone; and only the last is reported.
func FuzzDecideReservation(f *testing.F) {
	f.Add(uint8(0x1f), int64(time.Hour), int64(5*time.Minute))
	f.Add(uint8(0x03), int64(time.Minute), int64(5*time.Minute))
	f.Add(uint8(0x23), int64(time.Hour), int64(0))
	f.Add(uint8(0x00), int64(-time.Hour), int64(time.Minute))
	f.Fuzz(func(t *testing.T, flags uint8, age, grace int64) {
		r := reservationFacts{ContainerID: "c", Config: flags&1 != 0, Asked: flags&2 != 0, Listed: flags&4 != 0, Cached: flags&8 != 0,
			Never: flags&16 != 0, Untouched: flags&32 != 0, Age: time.Duration(age), Grace: time.Duration(grace)}
		r.Listed = r.Listed && r.Asked // only a runtime asked lists anything
		v := decideReservation(r)
		freed := v.Action == free
		switch {
		case v.ID != r.ContainerID:
			t.Fatalf("verdict %+v for %+v", v, r)
		case freed && r.Listed:
			t.Fatalf("row %d frees a reservation of a sandbox the runtime lists: %+v", v.Row, r)
		case freed && r.Cached:
			t.Fatalf("row %d frees a reservation whose sandbox the cache holds: %+v", v.Row, r)
		case freed && r.Untouched:
			t.Fatalf("row %d frees a reservation whose DEL would remove a file never touched: %+v", v.Row, r)
		case freed && !r.Asked:
			t.Fatalf("row %d frees a reservation without a runtime to ask: %+v", v.Row, r)
		case freed && r.Age < r.Grace:
			t.Fatalf("row %d frees a reservation younger than the grace: %+v", v.Row, r)
		case freed && (r.Never || !r.Config):
			t.Fatalf("row %d frees a reservation of a disableGC network, or whose config is gone: %+v", v.Row, r)
		case (v.Action == report) != !r.Config:
			t.Fatalf("row %d: action %d for %+v", v.Row, v.Action, r)
		case v.Action != free && v.Action != keep && v.Action != report:
			t.Fatalf("row %d: action %d for a reservation", v.Row, v.Action)
		}
	})
}

// docs/sdk/cni-freeing.md has one row for each of decide's, in the order
// decide tries them, and no other.
func TestTheDocsTableHasDecidesRows(t *testing.T) {
	b, err := os.ReadFile("../../docs/sdk/cni-freeing.md")
	require.NoError(t, err)
	var rows []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(string(b), -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		rows = append(rows, n)
	}
	want := make([]int, len(rowText))
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, rows)
}
