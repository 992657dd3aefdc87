package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

// A pod the engine requeues is tracked again, without a sandbox: its first
// check records the new one.
func TestRetrackTracksTheRequeuedPod(t *testing.T) {
	var logs testkube.Lines
	engine, err := deletion.New(
		ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) { return nil, ports.ErrPodNotFound }),
		ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }),
		deletion.Options{NodeName: "node-a", Logger: logr.Discard()})
	require.NoError(t, err)
	requeued := make(chan event.GenericEvent)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- retrack(requeued, logs.Logger())(ctx, engine) }()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}
	require.NoError(t, k8s.NewChannelRequeuer(requeued).Requeue(ctx, pod))
	require.Eventually(t, func() bool { return len(deletiontest.PUs(engine)) > 0 }, 5*time.Second, time.Millisecond)

	assert.Equal(t, []ports.PU{{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "web"}}}, deletiontest.PUs(engine),
		"the pod's PU is tracked again, without a sandbox")
	assert.Equal(t, 1, logs.Count(`"msg"="pod requeued: its sandbox changed" "pod"="ns/web" "uid"="uid-1"`))
	cancel()
	require.NoError(t, <-done, "it stops with the manager")
}

// Run refuses to start without a PolicyHandler, before it reads anything.
func TestRunRefusesNoPolicy(t *testing.T) {
	err := Run(context.Background(), []string{"--node=n"}, func(string) string { return "" }, &strings.Builder{}, Options{})
	require.ErrorContains(t, err, "Options.Policy is nil")
	err = Run(context.Background(), []string{"--node=n", "--cri-endpoint="}, func(string) string { return "" }, &strings.Builder{},
		Options{Policy: func(logr.Logger) ports.PolicyHandler { return nil }})
	require.ErrorContains(t, err, "Options.Policy returned nil")
}
