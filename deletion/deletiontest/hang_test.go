package deletiontest_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// TestAHungCallAnswersItsContextsError: a hung read or DestroyPU whose
// context ends answers an error wrapping the context's error
// (context.Canceled, DeadlineExceeded), as a real client does, even when the
// context was cancelled with a cause, so that errors.Is tells a shutdown from
// a failure.
func TestAHungCallAnswersItsContextsError(t *testing.T) {
	key := types.NamespacedName{Namespace: "shop", Name: "web-0"}
	stopping := errors.New("agent stopping")

	cluster := deletiontest.NewCluster()
	cluster.CreatePod(key, "node-a", "sb-1")
	release := cluster.HangReads(key)
	defer release()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stopping)
	if _, err := cluster.GetPod(ctx, key); !errors.Is(err, ctx.Err()) {
		t.Errorf("a hung read whose context ended answered %v, which does not wrap its context's error %v", err, ctx.Err())
	}

	policy := &deletiontest.Policy{}
	releasePolicy := policy.Hang()
	defer releasePolicy()
	if err := policy.DestroyPU(ctx, ports.DestroyEvent{PUID: "uid-1", Pod: key}); !errors.Is(err, ctx.Err()) {
		t.Errorf("a hung DestroyPU whose context ended answered %v, which does not wrap its context's error %v", err, ctx.Err())
	}
}
