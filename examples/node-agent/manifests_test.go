package main

import (
	"bytes"
	"github.com/podsweeper/podsweeper/examples/node-agent/agent"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// TestDaemonSetCarriesTheAgent checks that the DaemonSet runs the agent as
// the README and the flags describe it (checkAgentPod).
func TestDaemonSetCarriesTheAgent(t *testing.T) {
	var ds appsv1.DaemonSet
	testkube.ReadManifest(t, "deploy", "daemonset.yaml", &ds)
	cfg := checkAgentPod(t, ds.Spec.Template.Spec)
	assert.Equal(t, "/var/lib/podsweeper/journal.db", cfg.StateFile)
}

// checkAgentPod checks a pod of the agent: critical priority, every image
// other than the agent's own pinned by digest, flags that are the agent's
// own and turn on the journal, the CRI and the secure metrics, probes on
// the agent's endpoints, the journal on the host, and nothing privileged in
// the agent's container. It returns the agent's parsed command line.
func checkAgentPod(t *testing.T, spec corev1.PodSpec) agent.Config {
	t.Helper()
	assert.Equal(t, "system-node-critical", spec.PriorityClassName)
	assert.False(t, spec.HostNetwork, "the agent needs no host network")
	assert.False(t, spec.HostPID)

	for _, c := range spec.InitContainers {
		assert.Regexp(t, testkube.Pinned, c.Image, "init container %s", c.Name)
	}
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]

	cfg, err := agent.ParseFlags(c.Args, env(map[string]string{"NODE_NAME": "node-a"}), &bytes.Buffer{})
	require.NoError(t, err, "the agent's args parse")
	assert.True(t, cfg.MetricsSecure, "metrics behind authentication and authorization")
	assert.NotEmpty(t, cfg.StateFile, "the journal survives the agent")
	assert.NotEmpty(t, cfg.Node.CRIEndpoint, "sandbox restarts are seen")

	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}
	assert.True(t, env["NODE_NAME"], "--node comes from the pod's node")

	testkube.AssertProbes(t, c, cfg.HealthProbeBindAddress)
	testkube.AssertUnprivileged(t, spec, c)

	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	assert.True(t, mounts["cri-socket"].ReadOnly, "the runtime's socket directory is mounted read-only")
	socket, err := cri.SocketPath(cfg.Node.CRIEndpoint)
	require.NoError(t, err)
	assert.Equal(t, filepath.Dir(socket), mounts["cri-socket"].MountPath, "the socket's directory is mounted")
	assert.True(t, strings.HasPrefix(cfg.StateFile, mounts["state"].MountPath+"/"), "the journal is on the state volume")
	for _, v := range spec.Volumes {
		if v.Name == "state" {
			require.NotNil(t, v.HostPath, "the journal outlives the pod")
		}
	}
	return cfg
}

// TestClusterRoleIsLeastPrivilege pins the agent's RBAC to what it uses:
// reading pods, writing Events (create, and patch for a series; never
// reading, updating or deleting one), and reviewing the tokens of its
// metrics clients.
func TestClusterRoleIsLeastPrivilege(t *testing.T) {
	var role rbacv1.ClusterRole
	testkube.ReadManifest(t, "deploy", "clusterrole.yaml", &role)
	got := map[string][]string{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
		assert.Empty(t, r.ResourceNames)
		assert.Empty(t, r.NonResourceURLs)
	}
	assert.Equal(t, map[string][]string{
		"/pods":                                     {"get", "list", "watch"},
		"events.k8s.io/events":                      {"create", "patch"},
		"authentication.k8s.io/tokenreviews":        {"create"},
		"authorization.k8s.io/subjectaccessreviews": {"create"},
	}, got)
}
