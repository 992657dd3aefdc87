package deletion_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/ports"
)

// Track: "once Start's context is done (Start stops), nothing would check it: Track returns an error wrapping
// ErrNotRunning"; ErrNotRunning: "Start has not been called, or is stopping or has returned". While Start waits its
// ShutdownTimeout for a check stuck in a port, it is stopping: Track fails, and says so. (The audit found the docs
// saying "after Start has returned" of what happens from its context's end.)
func TestAuditHoldsTrackFailsOnceStartsContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		getter := ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
			<-hang // ignores its context
			return nil, errors.New("late")
		})
		engine := deletiontest.NewEngine(t, getter, &deletiontest.Policy{}, deletion.Options{ShutdownTimeout: 10 * time.Second})
		if err := engine.Track(ports.PU{PUID: "uid-1", Pod: nsKey("web")}); err != nil {
			t.Fatal(err)
		}
		engine.TriggerAll()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- engine.Start(ctx) }()
		synctest.Wait()
		cancel()
		time.Sleep(time.Second) // Start waits for the stuck check, up to 10s
		select {
		case <-done:
			t.Fatal("Start returned already")
		default:
		}
		err := engine.Track(ports.PU{PUID: "uid-2", Pod: nsKey("db")})
		if !errors.Is(err, deletion.ErrNotRunning) || !strings.Contains(err.Error(), "context is done") {
			t.Errorf("Track while Start stops: %v, want ErrNotRunning saying Start's context is done", err)
		}
		<-done
		close(hang)
	})
}
