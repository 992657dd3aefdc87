package cni

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AddressStatus.Unread says "what the Collector could not read for this
// answer": a round of more reservations than the page records
// (maxReservationsRecorded) leaves some untold, and the page says so
// rather than answer that no reservation holds the address.
func TestTheAddressPageSaysWhenReservationsArePastItsBound(t *testing.T) {
	c := &Collector{addresses: newAddressLog(), cache: cacheReader{dir: t.TempDir(), confDir: t.TempDir(), skips: newSkipLog(logr.Discard(), "")}}
	rs := make([]Reservation, maxReservationsRecorded+2)
	sts := make([]ReservationStatus, len(rs))
	for i := range rs {
		rs[i] = Reservation{Network: "podnet", DataDir: "/d", IP: fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), ContainerID: "c", IfName: "eth0"}
		sts[i] = ReservationStatus{Network: "podnet", File: rs[i].Path(), State: "kept"}
	}
	c.addresses.round(time.Now(), time.Now(), rs, sts, nil, nil)

	last := c.address(rs[len(rs)-1].IP)
	assert.Empty(t, last.Reservations, "past the bound")
	require.Len(t, last.Unread, 1)
	assert.Contains(t, last.Unread[0], "2 more than the 65536")

	first := c.address(rs[0].IP)
	assert.Len(t, first.Reservations, 1, "within the bound")
}
