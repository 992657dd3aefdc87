package deletion_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// Start(nil) returns ErrNilContext and may be called again.
func TestAuditHoldsStartNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		engine := deletiontest.NewEngine(t, deletiontest.NewCluster(), &deletiontest.Policy{}, deletion.Options{})
		//lint:ignore SA1012 the promise under test
		if err := engine.Start(nil); !errors.Is(err, deletion.ErrNilContext) { //nolint:staticcheck
			t.Fatalf("Start(nil) = %v", err)
		}
		deletiontest.Start(t, engine)
		synctest.Wait()
		if err := engine.LivenessCheck(nil); err != nil {
			t.Error(err)
		}
	})
}
