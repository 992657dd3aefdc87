package deletion_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// Running is true from Start's call until it returns, while it stops too (a check stuck in a port holds it past its
// context's end, within ShutdownTimeout), and false before and after.
func TestRunningIsFromStartUntilItReturnsStoppingIncluded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			<-stuck // ignores ctx, as a port may
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "u1"}}, nil
		})
		e, err := deletion.New(getter, ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
			deletion.Options{NodeName: "n", ShutdownTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if e.Running() {
			t.Fatal("Running before Start")
		}
		ctx, cancel := context.WithCancel(t.Context())
		returned := make(chan struct{})
		go func() { _ = e.Start(ctx); close(returned) }()
		synctest.Wait()
		if err := e.Track(ports.PU{PUID: "u1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}}); err != nil {
			t.Fatal(err)
		}
		e.TriggerPod(types.NamespacedName{Namespace: "ns", Name: "p"})
		time.Sleep(time.Second)
		if !e.Running() {
			t.Fatal("not Running while Start runs")
		}
		cancel()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("Start returned while a check is stuck, within ShutdownTimeout")
		default:
		}
		if !e.Running() {
			t.Fatal("not Running while Start stops")
		}
		close(stuck)
		<-returned
		if e.Running() {
			t.Fatal("Running once Start has returned")
		}
	})
}
