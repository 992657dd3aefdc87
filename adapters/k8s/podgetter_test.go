package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func testPod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

func TestPodGetterReturnsThePod(t *testing.T) {
	want := testPod("ns", "web", "uid-1", "node-a")
	c := fake.NewClientBuilder().WithObjects(want).Build()
	g := k8s.NewPodGetter(c)

	got, err := g.GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.NoError(t, err)
	assert.Equal(t, types.UID("uid-1"), got.UID)
	assert.Equal(t, "node-a", got.Spec.NodeName)

	// Each call returns a pod of its own: changing one leaves the next untouched.
	got.Spec.NodeName = "changed"
	again, err := g.GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.NoError(t, err)
	assert.Equal(t, "node-a", again.Spec.NodeName)
}

func TestPodGetterNotFoundMatchesBothConventions(t *testing.T) {
	g := k8s.NewPodGetter(fake.NewClientBuilder().Build())

	pod, err := g.GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "gone"})
	require.Error(t, err)
	assert.Nil(t, pod)
	assert.ErrorIs(t, err, ports.ErrPodNotFound)
	assert.True(t, apierrors.IsNotFound(err), "apierrors.IsNotFound(%v)", err)
	assert.True(t, deletion.IsNotFound(err))
	assert.Contains(t, err.Error(), "ns/gone")
	// The engine reads it as row 1 of the decision table.
	v := deletion.Decide(ports.PU{PUID: "u", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}, deletion.Observation{Err: err})
	assert.Equal(t, ports.ReasonPodGone, v.Reason)
}

func TestPodGetterWrapsOtherErrors(t *testing.T) {
	boom := errors.New("connection refused")
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		},
	}).Build()
	_, err := k8s.NewPodGetter(c).GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ports.ErrPodNotFound)
	assert.False(t, apierrors.IsNotFound(err))

	// A server-side error other than NotFound is not mistaken for one either.
	c = fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewServiceUnavailable("etcd down")
		},
	}).Build()
	_, err = k8s.NewPodGetter(c).GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.Error(t, err)
	assert.False(t, deletion.IsNotFound(err))
}

func TestPodGetterNilReader(t *testing.T) {
	pod, err := k8s.NewPodGetter(nil).GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
	require.Error(t, err)
	assert.Nil(t, pod)
	assert.False(t, deletion.IsNotFound(err), "a broken getter must never make a pod look gone")
}

// notFoundOnSecondReading is a reader's error whose cause is a plain failure when first read, and a NotFound after.
type notFoundOnSecondReading struct{ reads atomic.Int32 }

func (e *notFoundOnSecondReading) Error() string { return "get failed" }
func (e *notFoundOnSecondReading) Unwrap() error {
	if e.reads.Add(1) == 1 {
		return errors.New("connection reset")
	}
	return apierrors.NewNotFound(corev1.Resource("pods"), "web")
}

// statusFlipping is a Kubernetes status error whose Status changes at each reading: a 503 of no reason, then an
// InternalError of code 404. Neither reading is a NotFound; apierrors reads its reason and its code apart.
type statusFlipping struct{ reads atomic.Int32 }

func (e *statusFlipping) Error() string { return "status flipping" }
func (e *statusFlipping) Status() metav1.Status {
	if e.reads.Add(1) == 1 {
		return metav1.Status{Status: metav1.StatusFailure, Code: 503}
	}
	return metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Code: 404}
}

// selfWrapping is an error whose Unwrap returns itself: errors.As over it never ends.
type selfWrapping struct{}

func (e *selfWrapping) Error() string { return "wraps itself" }
func (e *selfWrapping) Unwrap() error { return e }

// The Reader may be anyone's (NewPodGetter takes any client.Reader): GetPod reads its error once, and answers as that
// reading said, however often it is read after: a failure first read never becomes a not-found (which would destroy
// a live pod's PU), and one that wraps itself is a failure, not a read that never ends.
func TestPodGetterAnswersAsItsOneReadingOfTheReadersError(t *testing.T) {
	for name, readerErr := range map[string]error{"flips": &notFoundOnSecondReading{}, "wraps itself": &selfWrapping{},
		"its status flips": &statusFlipping{}} {
		c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return readerErr
			},
		}).Build()
		done := make(chan error, 1)
		go func() {
			_, err := k8s.NewPodGetter(c).GetPod(t.Context(), types.NamespacedName{Namespace: "ns", Name: "web"})
			for range 3 {
				// Read as the engine reads a port's error: in a bounded walk (errors.Is over a self-wrapping error
				// never ends).
				if err == nil || deletion.IsNotFound(err) || ports.Match(err, func(e error) bool { return e == ports.ErrPodNotFound }) {
					done <- fmt.Errorf("GetPod = %v: a failure read as a not-found", err)
					return
				}
			}
			done <- nil
		}()
		select {
		case err := <-done:
			assert.NoError(t, err, name)
		case <-time.After(30 * time.Second): // a watchdog: the walk ends at once, or never
			t.Fatalf("%s: GetPod did not return: reading its reader's error never ends", name)
		}
	}
}
