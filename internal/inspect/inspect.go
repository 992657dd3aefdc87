// Package inspect lists the PUs an engine tracks, for tests: the PUs of
// deletion.Engine.Status, in its order (by PUID).
package inspect

import (
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// PUs returns the PUs e tracks, sorted by PUID.
func PUs(e *deletion.Engine) []ports.PU {
	st := e.Status()
	out := make([]ports.PU, len(st))
	for i, s := range st {
		out[i] = s.PU
	}
	return out
}
