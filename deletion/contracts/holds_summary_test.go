package contracts_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// engine.md:65-66: under Start, "each failing port gets one error line per SweepInterval (...; within an interval of
// the first, even on an engine with nothing else due)".
func TestHoldsFailureSummaryWithinAnIntervalUnderStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &errorLines{}
		g := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			return nil, errors.New("connection refused")
		})
		e, err := deletion.New(g, &deletiontest.Policy{}, deletion.Options{Logger: logs.logger(), SweepInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Track(ports.PU{PUID: "uid-a", Pod: key("a")})
		deletiontest.Start(t, e)
		advance(0)
		e.TriggerPod(key("a"))
		advance(time.Second)
		e.TriggerPod(key("a"))
		advance(time.Hour)
		lines := logs.matching(`"port"="GetPod"`)
		if len(lines) != 1 || contains(lines[0], `"failures"=1 `) {
			t.Fatalf("GetPod error lines within an interval of the first failure: %q", lines)
		}
	})
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
