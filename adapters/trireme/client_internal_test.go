package trireme

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// selfWrapping is an error whose Unwrap returns itself: errors.As, errors.Is and apierrors.IsNotFound over it never end,
// and reading its message overflows the stack, which no recover catches.
type selfWrapping struct{}

func (e *selfWrapping) Error() string { return "wraps " + e.Unwrap().Error() } // as an ordinary wrapper reads
func (e *selfWrapping) Unwrap() error { return e }

// errReader is a client.Reader whose Get fails with err.
type errReader struct {
	client.Reader
	err error
}

func (r errReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return r.err
}

// TestGetPodEndsOnAnErrorThatUnwrapsToItself: the reader is other people's code, and its error is read in a bounded
// walk (deletion.IsNotFound): one whose Unwrap returns itself is a failure that keeps the PU, not a check spinning
// forever in a worker, nor a message read that overflows the stack.
func TestGetPodEndsOnAnErrorThatUnwrapsToItself(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := readerGetter{r: errReader{err: &selfWrapping{}}}.GetPod(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || deletion.IsNotFound(err) {
			t.Fatalf("GetPod = %v, want a failure that is not NotFound", err)
		}
	case <-time.After(30 * time.Second): // a watchdog: the walk ends at once, or never
		t.Fatal("GetPod did not return: reading its reader's error never ends")
	}
}

// cyclicResolver answers every HandlePUEvent with an error that wraps itself.
type cyclicResolver struct{}

func (cyclicResolver) HandlePUEvent(context.Context, string, string, any) error {
	return &selfWrapping{}
}

// TestDestroyPUEndsOnAResolverErrorThatUnwrapsToItself: the resolver's error is wrapped only when it can be read
// (ports.Readable); one that cannot is handed to the engine as it is, which takes it as a failure and retries.
func TestDestroyPUEndsOnAResolverErrorThatUnwrapsToItself(t *testing.T) {
	h := NewPolicyHandler[string, any](cyclicResolver{}, "destroy", nil)
	err := h.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-1", Pod: types.NamespacedName{Namespace: "ns", Name: "p"}})
	if err == nil || ports.Readable(err) {
		t.Fatalf("DestroyPU = %T, want the resolver's error, which cannot be read", err)
	}
}

// notFoundOnSecondReading is a client's error whose cause is a plain failure when first read, and a NotFound after:
// a cause its own code replaces once the call has returned.
type notFoundOnSecondReading struct{ reads atomic.Int32 }

func (e *notFoundOnSecondReading) Error() string { return "get failed" }
func (e *notFoundOnSecondReading) Unwrap() error {
	if e.reads.Add(1) == 1 {
		return errors.New("connection reset")
	}
	return apierrors.NewNotFound(corev1.Resource("pods"), "p")
}

// TestGetPodAnswersAsItsOneReadingOfTheClientsError: GetPod reads the client's error once, and its answer says what
// that reading said, however often the engine reads it after: a failure ("connection reset"), never a not-found
// that would destroy a live pod's PU.
func TestGetPodAnswersAsItsOneReadingOfTheClientsError(t *testing.T) {
	_, err := readerGetter{r: errReader{err: &notFoundOnSecondReading{}}}.GetPod(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"})
	for range 3 {
		if err == nil || deletion.IsNotFound(err) || errors.Is(err, ports.ErrPodNotFound) || apierrors.IsNotFound(err) {
			t.Fatalf("GetPod = %v: read again, a failure first read became a not-found", err)
		}
	}
}
