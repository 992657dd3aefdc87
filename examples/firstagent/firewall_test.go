package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// A PU destroyed for its sandbox (SandboxChanged) is of a pod that lives on: the rules its enforcer made for the
// pod's new sandbox, under the same PUID, stay; the PU of that sandbox, or of none known, goes.
func TestTheRulesOfAPodsNewSandboxOutliveTheOldOnesDestroy(t *testing.T) {
	f := NewFirewall()
	pod := types.NamespacedName{Namespace: "apps", Name: "web"}
	f.Create(ports.PU{PUID: "uid-web", Pod: pod, SandboxID: "sb-2"}, "allow ingress from namespace apps")
	old := ports.DestroyEvent{PUID: "uid-web", Pod: pod, SandboxID: "sb-1", Reason: ports.ReasonSandboxChanged}
	assert.NoError(t, f.DestroyPU(t.Context(), old))
	assert.NotEmpty(t, f.Rules("uid-web"), "the new sandbox's rules stay")

	assert.NoError(t, f.DestroyPU(t.Context(), ports.DestroyEvent{PUID: "uid-web", Pod: pod, SandboxID: "sb-2", Reason: ports.ReasonPodGone}))
	assert.Empty(t, f.Rules("uid-web"), "its own sandbox's PU goes")

	f.Create(ports.PU{PUID: "uid-web", Pod: pod}, "allow ingress from namespace apps")
	assert.NoError(t, f.DestroyPU(t.Context(), old))
	assert.Empty(t, f.Rules("uid-web"), "rules made for no known sandbox go with any of the pod's")
}
