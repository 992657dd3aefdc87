package deletion_test

import (
	"testing"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// TestValidateRefusesATypedNilPortAsNewDoes: Validate reports whether New
// would take the options, an optional port that is a typed nil pointer or a
// nil func included (New refuses it with ErrNilPort), so that a program that
// checks its command line with Validate does not fail in New.
func TestValidateRefusesATypedNilPortAsNewDoes(t *testing.T) {
	var inv *deletiontest.Inventory // a typed nil pointer
	for name, o := range map[string]deletion.Options{
		"Inventory (*deletiontest.Inventory)(nil)":      {Inventory: inv},
		"Observer ObserverFunc(nil)":                    {Observer: deletion.ObserverFunc(nil)},
		"SandboxExtractor (*deletiontest.Cluster)(nil)": {SandboxExtractor: (*deletiontest.Cluster)(nil)},
	} {
		_, newErr := deletion.New(deletiontest.NewCluster(), &deletiontest.Policy{}, o)
		valErr := o.Validate()
		if (newErr == nil) != (valErr == nil) {
			t.Errorf("%s: New says %v, Validate says %v: Validate does not report whether New would take o", name, newErr, valErr)
		}
	}
}
