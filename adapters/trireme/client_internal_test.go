package trireme

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/deletion"
)

// selfWrapping is an error whose Unwrap returns itself: errors.As, errors.Is and apierrors.IsNotFound over it never end.
type selfWrapping struct{}

func (e *selfWrapping) Error() string { return "an error that wraps itself" }
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
// forever in a worker.
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
