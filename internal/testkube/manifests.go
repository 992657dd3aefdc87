package testkube

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Pinned matches an image reference fixed by the digest of its content.
var Pinned = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// ReadManifest decodes the manifest dir/name into into, strictly: a field
// the type does not have is an error, as kubectl's validation would say.
func ReadManifest(t *testing.T, dir, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, into), name)
}

// AssertProbes checks that c's startup and liveness probes get /healthz and
// its readiness probe /readyz, on its port named "probes", and that this
// port is the one of probeAddr (the process's --health-probe-bind-address,
// ":<port>").
func AssertProbes(t *testing.T, c corev1.Container, probeAddr string) {
	t.Helper()
	probe := func(p *corev1.Probe, path string) {
		t.Helper()
		require.NotNil(t, p)
		require.NotNil(t, p.HTTPGet)
		assert.Equal(t, path, p.HTTPGet.Path)
		assert.Equal(t, "probes", p.HTTPGet.Port.StrVal)
	}
	probe(c.StartupProbe, "/healthz")
	probe(c.LivenessProbe, "/healthz")
	probe(c.ReadinessProbe, "/readyz")
	var port int32
	for _, p := range c.Ports {
		if p.Name == "probes" {
			port = p.ContainerPort
		}
	}
	assert.Equal(t, probeAddr, ":"+strconv.Itoa(int(port)), "the probe port is the one the process listens on")
}

// AssertUnprivileged checks that c runs without privileges: no privilege
// escalation, a read-only root filesystem, every capability dropped and
// none added, not privileged, and a pod that runs as non-root.
func AssertUnprivileged(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	require.NotNil(t, sc)
	require.NotNil(t, sc.AllowPrivilegeEscalation)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	require.NotNil(t, sc.ReadOnlyRootFilesystem)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.Nil(t, sc.Privileged)
	require.NotNil(t, pod.SecurityContext)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
}

// Env returns the environment variables of c that have a value of their
// own (not one from a field or a resource), by name.
func Env(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	return env
}
