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

// engine.md:66-68: under Start, "each failing port gets one error line per SweepInterval (...: the first failure
// after a quiet interval at once, the next ones summed up an interval after the last line, whoever drives the
// engine)": a line at once for the first failure, one an hour later for those after it.
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
		advance(0)
		if lines := logs.matching(`"port"="GetPod"`); len(lines) != 1 || !contains(lines[0], `"failures"=1 `) {
			t.Fatalf("the first failure is not summed up at once: %q", lines)
		}
		advance(time.Second)
		e.TriggerPod(key("a"))
		advance(time.Hour)
		lines := logs.matching(`"port"="GetPod"`)
		if len(lines) != 2 || !contains(lines[1], `"failures"=2 `) {
			t.Fatalf("GetPod error lines an interval after the first: %q", lines)
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
