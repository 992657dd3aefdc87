package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/program"
)

// TestDaemonSetMountsWhatThePluginsNeed checks deploy/'s DaemonSet with
// checkCollectorPod.
func TestDaemonSetMountsWhatThePluginsNeed(t *testing.T) {
	var ds appsv1.DaemonSet
	testkube.ReadManifest(t, "deploy", "daemonset.yaml", &ds)
	checkCollectorPod(t, ds.Spec.Template.Spec)
}

// checkCollectorPod checks that a pod runs the collector where the plugins
// would run: the host's network namespace, the host's CNI directories at
// the same paths (the cache read-write, the configs and plugins
// read-only), the pods' network namespaces propagated from the host, and
// flags that are the collector's own. It returns the parsed command line.
func checkCollectorPod(t *testing.T, spec corev1.PodSpec) config {
	t.Helper()
	assert.True(t, spec.HostNetwork, "DEL runs in the host's network namespace")
	assert.Equal(t, "system-node-critical", spec.PriorityClassName)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]

	cfg, err := parseFlags(c.Args, func(string) string { return "node-a" }, &bytes.Buffer{})
	require.NoError(t, err, "the collector's args parse")
	testkube.AssertProbes(t, c, cfg.HealthProbeBindAddress)

	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		require.NotNil(t, v.HostPath, v.Name)
		hostPaths[v.Name] = v.HostPath.Path
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
		assert.Equal(t, hostPaths[m.Name], m.MountPath, "%s is mounted at the host's path", m.Name)
	}
	want := map[string]bool{cfg.cacheDir: false, cfg.confDir: true, "/run/netns": true}
	for _, d := range strings.Split(cfg.pluginDirs, ",") {
		want[d] = true
	}
	socket, err := cri.SocketPath(cfg.node.CRIEndpoint)
	require.NoError(t, err)
	want[filepath.Dir(socket)] = true
	for path, readOnly := range want {
		m, ok := mounts[path]
		if assert.True(t, ok, "%s is mounted", path) {
			assert.Equal(t, readOnly, m.ReadOnly, path)
		}
	}
	require.NotNil(t, mounts["/run/netns"].MountPropagation)
	assert.Equal(t, corev1.MountPropagationHostToContainer, *mounts["/run/netns"].MountPropagation)

	require.NotNil(t, spec.SecurityContext)
	require.NotNil(t, spec.SecurityContext.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, spec.SecurityContext.SeccompProfile.Type)
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.False(t, sc.Privileged != nil && *sc.Privileged, "not privileged: two capabilities")
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.ElementsMatch(t, []corev1.Capability{"NET_ADMIN", "SYS_ADMIN"}, sc.Capabilities.Add)
	return cfg
}

// TestClusterRoleReadsPodsOnly pins the collector's RBAC to get, list and
// watch on pods.
func TestClusterRoleReadsPodsOnly(t *testing.T) {
	var role rbacv1.ClusterRole
	testkube.ReadManifest(t, "deploy", "clusterrole.yaml", &role)
	require.Len(t, role.Rules, 1)
	assert.Equal(t, []string{""}, role.Rules[0].APIGroups)
	assert.Equal(t, []string{"pods"}, role.Rules[0].Resources)
	assert.ElementsMatch(t, []string{"get", "list", "watch"}, role.Rules[0].Verbs)
}

// TestManifestsApply creates every object of deploy/ on a real API server,
// which validates them.
func TestManifestsApply(t *testing.T) {
	cfg, _ := testkube.StartAPIServer(t)
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	testkube.ApplyKustomization(t, c, "deploy")
}

// TestFlagsRequireTheRuntimeAndTheNode keeps the command line
// from starting a collector that cannot tell a current sandbox.
func TestFlagsRequireTheRuntimeAndTheNode(t *testing.T) {
	env := func(string) string { return "node-a" }
	_, err := parseFlags([]string{"--cri-endpoint="}, env, &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage)
	_, err = parseFlags(nil, func(string) string { return "" }, &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage, "--node is required")
	cfg, err := parseFlags(nil, env, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9812", cfg.MetricsBindAddress, "plain HTTP metrics stay on loopback by default")
}

// TestFlagsNoCollectorRunsWithAreRefused: a --cri-endpoint that names no
// Unix socket, a --resync-interval under MinSweepInterval or past a year,
// a --reservation-grace of zero, negative or past a year, and an empty
// --cni-bin-dir are usage errors, before the collector connects to
// anything.
func TestFlagsNoCollectorRunsWithAreRefused(t *testing.T) {
	env := func(string) string { return "node-a" }
	for name, args := range map[string][]string{
		"a TCP runtime":              {"--cri-endpoint=tcp://127.0.0.1:1"},
		"no resync":                  {"--resync-interval=0s"},
		"a resync past MaxDuration":  {"--resync-interval=10000h"},
		"a resync that spins a core": {"--resync-interval=1ns"},
		"no reservation grace":       {"--reservation-grace=0s"},
		"a negative grace":           {"--reservation-grace=-1m"},
		"a grace past MaxDuration":   {"--reservation-grace=10000h"},
		"no plugin directory":        {"--cni-bin-dir="},
		"an empty plugin directory":  {"--cni-bin-dir=/opt/cni/bin,"},
	} {
		_, err := parseFlags(args, env, &bytes.Buffer{})
		assert.ErrorIs(t, err, program.ErrUsage, name)
	}
}

// TestAMissingCNIDirectoryIsAUsageError: libcni's cache directory and the
// plugins' are the runtime's, mounted from the node, and never created: a
// --cni-cache-dir or --cni-bin-dir that does not exist is a usage error
// (status 2) naming the flag, before the collector connects to anything.
func TestAMissingCNIDirectoryIsAUsageError(t *testing.T) {
	env := func(string) string { return "node-a" }
	dir := t.TempDir()
	missing := filepath.Join(dir, "not-mounted")
	for flag, c := range map[string]struct {
		args []string
		what string
	}{
		"--cni-cache-dir": {[]string{"--cni-cache-dir=" + missing, "--cni-bin-dir=" + dir}, "the cache directory " + missing},
		"--cni-bin-dir":   {[]string{"--cni-cache-dir=" + dir, "--cni-bin-dir=" + dir + "," + missing}, "a plugin directory " + missing},
	} {
		args := append(c.args, "--cri-endpoint=unix://"+filepath.Join(dir, "no-runtime.sock"), "--kubeconfig="+filepath.Join(dir, "no-kubeconfig"))
		err := run(context.Background(), args, env, &bytes.Buffer{})
		require.ErrorIs(t, err, program.ErrUsage, flag)
		assert.Contains(t, err.Error(), flag)
		assert.Contains(t, err.Error(), c.what, flag)
	}
	_, err := os.Stat(missing)
	assert.ErrorIs(t, err, os.ErrNotExist, "the directory is not created")
}

// TestAConfDirThatIsAFileIsAUsageError: a --cni-conf-dir that is a file,
// every read of which would fail, is a usage error (status 2) naming the
// flag, before the collector connects to anything; one that does not exist
// holds no config, and is not refused.
func TestAConfDirThatIsAFileIsAUsageError(t *testing.T) {
	env := func(string) string { return "node-a" }
	dir := t.TempDir()
	file := filepath.Join(dir, "net.d")
	require.NoError(t, os.WriteFile(file, []byte("{}"), 0o644))
	args := []string{"--cni-cache-dir=" + dir, "--cni-bin-dir=" + dir, "--cri-endpoint=unix://" + filepath.Join(dir, "no-runtime.sock"),
		"--kubeconfig=" + filepath.Join(dir, "no-kubeconfig")}
	err := run(context.Background(), append(args, "--cni-conf-dir="+file), env, &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--cni-conf-dir")
	assert.Contains(t, err.Error(), file+" is not a directory")

	err = run(context.Background(), append(args, "--cni-conf-dir="+filepath.Join(dir, "missing")), env, &bytes.Buffer{})
	require.Error(t, err, "no cluster to find")
	assert.NotContains(t, err.Error(), "--cni-conf-dir", "a conf dir that does not exist holds no config")
	assert.Contains(t, err.Error(), "--kubeconfig")
}

// TestAConfDirThatIsALoopOfLinksIsAUsageError: a --cni-conf-dir that is a
// loop of links is there, is no directory, and every read of it fails: a
// usage error (status 2) naming the flag, before the collector connects to
// anything.
func TestAConfDirThatIsALoopOfLinksIsAUsageError(t *testing.T) {
	env := func(string) string { return "node-a" }
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop1")
	require.NoError(t, os.Symlink(filepath.Join(dir, "loop2"), loop))
	require.NoError(t, os.Symlink(loop, filepath.Join(dir, "loop2")))
	args := []string{"--cni-cache-dir=" + dir, "--cni-bin-dir=" + dir, "--cri-endpoint=unix://" + filepath.Join(dir, "no-runtime.sock"),
		"--kubeconfig=" + filepath.Join(dir, "no-kubeconfig"), "--cni-conf-dir=" + loop}
	err := run(context.Background(), args, env, &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--cni-conf-dir")
	assert.Contains(t, err.Error(), loop)
}

// TestAConfDirThatIsALinkToNothingIsAUsageError: a --cni-conf-dir that is a
// link to nothing (its target not mounted) is there and no directory: it is
// not one that does not exist, for its target may hold a config that says
// disableGC. A usage error (status 2) naming the flag, before the collector
// connects to anything; a link to a directory (the chart's
// cni.confLinkDirs, mounted) is taken.
func TestAConfDirThatIsALinkToNothingIsAUsageError(t *testing.T) {
	env := func(string) string { return "node-a" }
	dir := t.TempDir()
	link := filepath.Join(dir, "net.d")
	require.NoError(t, os.Symlink(filepath.Join(dir, "not-mounted"), link))
	args := []string{"--cni-cache-dir=" + dir, "--cni-bin-dir=" + dir, "--cri-endpoint=unix://" + filepath.Join(dir, "no-runtime.sock"),
		"--kubeconfig=" + filepath.Join(dir, "no-kubeconfig")}
	err := run(context.Background(), append(args, "--cni-conf-dir="+link), env, &bytes.Buffer{})
	require.ErrorIs(t, err, program.ErrUsage)
	assert.Contains(t, err.Error(), "--cni-conf-dir")
	assert.Contains(t, err.Error(), link+" is a link to nothing")

	require.NoError(t, os.Mkdir(filepath.Join(dir, "not-mounted"), 0o755))
	err = run(context.Background(), append(args, "--cni-conf-dir="+link), env, &bytes.Buffer{})
	require.Error(t, err, "no cluster to find")
	assert.NotErrorIs(t, err, program.ErrUsage, "a link to a directory is taken")
	assert.NotContains(t, err.Error(), "--cni-conf-dir", "a link to a directory is taken")
}
