package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/podsweeper/podsweeper/internal/testkube"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestDeploymentCarriesTheController checks that the Deployment runs the
// controller as its doc describes it: two replicas, and checkControllerPod.
func TestDeploymentCarriesTheController(t *testing.T) {
	var d appsv1.Deployment
	testkube.ReadManifest(t, "deploy", "deployment.yaml", &d)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	cfg := checkControllerPod(t, d.Spec.Template.Spec, "podsweeper-cluster")
	assert.Equal(t, 16, cfg.Workers)
	var pvc corev1.PersistentVolumeClaim
	testkube.ReadManifest(t, "deploy", "pvc.yaml", &pvc)
	assert.Equal(t, pvc.Name, d.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, pvc.Spec.AccessModes, "both replicas mount it")
}

// checkControllerPod checks a pod of the controller, in namespace: leader
// election on a Lease of its own namespace, flags that are the
// controller's own, probes on its endpoints, the PU directory on a volume
// both replicas share, nothing privileged. It returns the controller's
// parsed command line.
func checkControllerPod(t *testing.T, spec corev1.PodSpec, namespace string) config {
	t.Helper()
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	cfg, err := parseFlags(c.Args, env(map[string]string{"POD_NAMESPACE": namespace}), &bytes.Buffer{})
	require.NoError(t, err, "the controller's args parse")
	assert.True(t, cfg.leaderElect, "one replica destroys")
	assert.Equal(t, namespace, cfg.leaseNS)
	envs := map[string]bool{}
	for _, e := range c.Env {
		envs[e.Name] = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}
	assert.True(t, envs["POD_NAMESPACE"], "the Lease's namespace is the pod's")

	testkube.AssertProbes(t, c, cfg.HealthProbeBindAddress)
	testkube.AssertUnprivileged(t, spec, c)

	require.Len(t, c.VolumeMounts, 1)
	assert.Equal(t, cfg.puDir, c.VolumeMounts[0].MountPath, "--pu-dir is the shared volume")
	require.Len(t, spec.Volumes, 1)
	require.NotNil(t, spec.Volumes[0].PersistentVolumeClaim)
	return cfg
}

func rules(rs []rbacv1.PolicyRule, t *testing.T) map[string][]string {
	got := map[string][]string{}
	for _, r := range rs {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
		assert.Empty(t, r.ResourceNames)
		assert.Empty(t, r.NonResourceURLs)
	}
	return got
}

// TestRBACIsLeastPrivilege pins the controller's RBAC to what it uses:
// reading pods and writing the Events of its destroys (create, and patch
// for a series) everywhere, reviewing the tokens of its metrics' clients;
// the Lease in its own namespace.
func TestRBACIsLeastPrivilege(t *testing.T) {
	var cr rbacv1.ClusterRole
	testkube.ReadManifest(t, "deploy", "clusterrole.yaml", &cr)
	assert.Equal(t, map[string][]string{
		"/pods":                                     {"get", "list", "watch"},
		"events.k8s.io/events":                      {"create", "patch"},
		"authentication.k8s.io/tokenreviews":        {"create"},
		"authorization.k8s.io/subjectaccessreviews": {"create"},
	}, rules(cr.Rules, t))
	var role rbacv1.Role
	testkube.ReadManifest(t, "deploy", "role.yaml", &role)
	assert.Equal(t, "podsweeper-cluster", role.Namespace)
	assert.Equal(t, map[string][]string{
		"coordination.k8s.io/leases": {"get", "create", "update"},
	}, rules(role.Rules, t))
}
