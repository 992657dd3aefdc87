package deletion_test

// An independent audit of the engine's documented promises, through the public API alone: each TestAudit<Promise>
// broke a promise when it was written and holds it now; each TestAuditHolds<Promise> held under the same kind of
// attack.

import (
	"errors"
)

var _ = errors.New
