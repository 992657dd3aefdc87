package cri

import (
	"testing"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pick must answer sensibly whatever a runtime sends: in any order, with
// missing metadata or IDs, and with ties.
func TestPick(t *testing.T) {
	const uid = "u"
	sb := func(id string, attempt uint32, created int64) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{
			Id:        id,
			Metadata:  &runtimeapi.PodSandboxMetadata{Attempt: attempt},
			State:     runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: created,
			Labels:    map[string]string{PodUIDLabel: uid},
		}
	}
	noMetadata := sb("no-metadata", 0, 50)
	noMetadata.Metadata = nil
	for name, tc := range map[string]struct {
		items []*runtimeapi.PodSandbox
		want  string
	}{
		"nothing":                  {nil, ""},
		"a nil item":               {[]*runtimeapi.PodSandbox{nil}, ""},
		"highest attempt":          {[]*runtimeapi.PodSandbox{sb("a", 2, 1), sb("b", 1, 9), sb("c", 0, 99)}, "a"},
		"then newest":              {[]*runtimeapi.PodSandbox{sb("a", 1, 1), sb("b", 1, 9), sb("c", 0, 99)}, "b"},
		"then greatest ID":         {[]*runtimeapi.PodSandbox{sb("a", 1, 9), sb("b", 1, 9)}, "b"},
		"order does not matter":    {[]*runtimeapi.PodSandbox{sb("b", 1, 9), sb("a", 1, 9)}, "b"},
		"no metadata is attempt 0": {[]*runtimeapi.PodSandbox{noMetadata, sb("old", 0, 10)}, "no-metadata"},
		"no ID is skipped":         {[]*runtimeapi.PodSandbox{sb("", 5, 99), sb("a", 0, 1)}, "a"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, pick(tc.items, uid))
		})
	}
}
