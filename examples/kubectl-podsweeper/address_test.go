package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// TestAddressStatusIsCNIs: the plugin reads cni-gc's page of an address
// with types of its own (it builds for any OS, adapters/cni for Linux
// only): they read every field adapters/cni writes, and its path.
func TestAddressStatusIsCNIs(t *testing.T) {
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	d := cni.FreeDecision{At: at, Reason: "PodGone", DryRun: true, Row: 11, Why: "why", Verdict: "free"}
	in := cni.AddressStatus{IP: "10.88.0.4",
		Attachments: []cni.AttachmentStatus{{Network: "n", ContainerID: "c", IfName: "eth0", PodNamespace: "ns", PodName: "p", PodUID: "u",
			Written: at, DisableGC: true, File: "n-c-eth0", NeverTouched: "why", Decision: &d}},
		Reservations: []cni.ReservationStatus{{Network: "n", DataDir: "/d", File: "/d/n/10.88.0.4", ContainerID: "c", IfName: "eth0",
			Reserved: at, Decision: d, State: "free failed", Error: "e"}},
		ReservationsRead: &at,
		Freed: []cni.FreedAddress{{At: at, Reservation: true, Network: "n", File: "/f", ContainerID: "c", IfName: "eth0", PodNamespace: "ns",
			PodName: "p", PodUID: "u", Decision: d}},
		Unread: []string{"ConfDir: why"},
	}
	want, err := json.Marshal(in)
	require.NoError(t, err)
	var mine AddressStatus
	require.NoError(t, json.Unmarshal(want, &mine))
	got, err := json.Marshal(mine)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	assert.Equal(t, cni.AddressPath, addressPath)
}

// cni-gc's address page tells when it answered in the header the programs'
// status pages use (k8s.TimeHeader), which the plugin reads.
func TestCNIsTimeHeaderIsTheStatusPages(t *testing.T) {
	if cni.TimeHeader != k8s.TimeHeader {
		t.Fatalf("cni.TimeHeader %q, k8s.TimeHeader %q", cni.TimeHeader, k8s.TimeHeader)
	}
}

// TestEveryReservationStateIsSaidInWords: each state adapters/cni gives a
// reservation (cni.ReservationStatus.State) has the plugin's words.
func TestEveryReservationStateIsSaidInWords(t *testing.T) {
	for _, s := range []string{cni.ReservationKept, cni.ReservationReported, cni.ReservationWouldFree, cni.ReservationToFree,
		cni.ReservationFreed, cni.ReservationFreeFailed, cni.ReservationKeptOnRecheck, cni.ReservationNotRechecked,
		cni.ReservationReleasedMeanwhile, cni.ReservationNeverTouched} {
		assert.NotEmpty(t, reservationStates[s], "state %q has no words", s)
	}
}
