package rounds_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// ReservationStatus.State is one of the ReservationState constants: a reservation released by its runtime while the
// round runs (after the round read it, before its DEL) is told ReservationReleasedMeanwhile.
func TestAReservationReleasedMeanwhileIsToldSo(t *testing.T) {
	documented := []string{cni.ReservationKept, cni.ReservationReported, cni.ReservationWouldFree, cni.ReservationToFree, cni.ReservationFreed,
		cni.ReservationFreeFailed, cni.ReservationKeptOnRecheck, cni.ReservationNotRechecked, cni.ReservationReleasedMeanwhile,
		cni.ReservationNeverTouched}
	var f string
	rt := &testcni.Runtime{}
	rt.Hook = func(n int) {
		if n == 1 && f != "" { // the runtime's own DEL releases it now
			if err := os.Remove(f); err != nil {
				t.Error(err)
			}
		}
	}
	// sweep writes the files before New; the hook needs their path.
	c, e, _ := sweep(t, rt, map[string]string{"10.22.0.5": "gone\r\neth0"}, nil, func(_ *cni.Options, e env) {
		f = filepath.Join(e.data, "net", "10.22.0.5")
	})
	_ = e
	st, _ := page(t, c, "10.22.0.5")
	if s := st.Reservations[0].State; !slices.Contains(documented, s) || s != cni.ReservationReleasedMeanwhile {
		t.Fatalf("state %q is none of the documented values %q", s, documented)
	}
}
