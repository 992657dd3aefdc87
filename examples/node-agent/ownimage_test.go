package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testdeploy"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// An agent's own image, as docs/sdk/first-agent.md builds it: the first
// agent's files (examples/firstagent, its tests aside) in a module of
// their own that requires podsweeper (replaced by this clone), committed,
// then `make image PROGRAM=node-agent MODULE=<the module>`. The image's
// SBOM names that module as its main component and lists the modules it
// is built from; imported into a real
// containerd node, it is run by the node agent's chart with only the image
// changed: the pod becomes Ready, runs that image, never restarts, and a
// pod deleted from the node has its PU destroyed through the first agent's
// Firewall (the engine's destroyed line, a PUDestroyed Event).
func TestOwnImageFromTheChartOnContainerd(t *testing.T) {
	for _, tool := range []string{"IMAGES_TOOL", "SBOM_TOOL"} {
		if os.Getenv(tool) == "" {
			testnode.Unavailable(t, "%s is not set: run `make test`", tool)
		}
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	module := firstAgentModule(t, root)
	images := t.TempDir()
	built := time.Now()
	make := exec.Command("make", "-C", root, "image", "PROGRAM=node-agent", "MODULE="+module, "IMAGE_DIR="+images, "IMAGE_NAME=first-agent")
	out, err := make.CombinedOutput()
	require.NoError(t, err, "make image:\n%s", out)
	require.NotContains(t, string(out), "has changes git has not committed", "the module is committed")
	t.Logf("make image built the first agent's image in %v: %s", time.Since(built).Round(time.Millisecond), digestLine(string(out)))

	var sbom struct {
		Metadata struct {
			Component struct {
				Name string `json:"name"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Name string `json:"name"`
		} `json:"components"`
	}
	b, err := os.ReadFile(filepath.Join(images, "node-agent.cdx.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sbom))
	assert.Equal(t, "example.com/first-agent", sbom.Metadata.Component.Name, "the SBOM's main component is the agent's module")
	var names []string
	for _, c := range sbom.Components {
		names = append(names, c.Name)
	}
	// The SDK itself, replaced by a directory, has no version to list
	// (docs/sdk/first-agent.md says so); the modules it requires are listed.
	assert.Contains(t, names, "sigs.k8s.io/controller-runtime", "the SBOM lists the modules the agent is built from")

	e := testdeploy.Start(t, "node-own", testcontainerd.Options{})
	img := e.ImportImageFrom(t, images, "node-agent")
	require.Equal(t, "first-agent", img.Repository, "the image is named as make image was told")
	e.Node.ImportImage(t, testcontainerd.ShellImageArchive(t), "")
	values := e.Values(t, img)
	values["stateDirInitImage"] = testcontainerd.ShellImage
	const ns = "podsweeper"
	objs := testdeploy.Render(t, "chart", "first-agent", ns, values)
	e.Apply(t, ns, objs)
	agent := e.WaitReady(t, e.RunDaemonSet(t, ns, testdeploy.Named(t, objs, "DaemonSet")))
	require.Equal(t, img.Ref(), agent.Spec.Containers[0].Image, "the pod runs the agent's own image")

	ctx := context.Background()
	e.Cluster.CreateNamespace(t, "apps")
	web := e.Node.RunPod(t, e.Node.NewPod("apps", "web"))
	fetch := metricsClient(t, e, agent, "first-agent-podsweeper-node-agent") // the chart's fullname
	sandbox, err := e.Node.ReadySandbox(ctx, string(web.UID))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var status []k8s.PUStatus
		_, body := fetch(k8s.StatusPath)
		return json.Unmarshal([]byte(body), &status) == nil && hasPU(status, web.UID, sandbox)
	}, 60*time.Second, 100*time.Millisecond, "the agent tracks the pod's PU with its sandbox %s", sandbox)
	require.NoError(t, e.Cluster.Client.Delete(ctx, web))
	require.Eventually(t, func() bool {
		for _, l := range e.Node.ContainerLog(t, agent, "node-agent") {
			if line, err := parseLogLine([]byte(l.Text)); err == nil && line.Msg == k8s.LogMessageDestroyed && line.PUID == string(web.UID) {
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "the agent's log records the destroy")
	require.Eventually(t, func() bool { return destroyEvent(t, e, web.UID) != nil }, 30*time.Second, 100*time.Millisecond,
		"a %s Event of the destroy", k8s.EventReasonDestroyed)
	_, body := fetch("/metrics")
	assert.Contains(t, body, k8s.MetricDestroys+`{reason="PodGone"} 1`, "one destroy, through the Firewall")
}

// firstAgentModule writes the first agent's module as the guide has its
// reader make it: examples/firstagent's files but its tests, a go.mod that
// requires podsweeper, replaced by the clone at root (its requirements and
// go.sum, so that nothing is fetched), committed in a git repository of
// its own. It returns the module's directory.
func firstAgentModule(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(root, "examples", "firstagent", "*.go"))
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644))
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	mod, ok := strings.CutPrefix(string(gomod), "module github.com/podsweeper/podsweeper\n")
	require.True(t, ok, "go.mod starts with the module's path")
	mod = "module example.com/first-agent\n" + mod +
		"\nrequire github.com/podsweeper/podsweeper v0.0.0\n\nreplace github.com/podsweeper/podsweeper => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=first agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", "first agent"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

// digestLine returns the line of make image's output that names the image
// and its digest.
func digestLine(out string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "node-agent ") {
			return strings.TrimSpace(line)
		}
	}
	return "(no digest line)"
}

// docs/sdk/first-agent.md: `make image` builds an image whose binary, labels and SBOM name the module's commit. A
// module it cannot name so is refused before anything is built, saying what to do: one that is no git work tree, one
// whose repository has no commit yet, and one inside another repository (whose commit the binary would record, and
// the SBOM another version). A build that fails leaves nothing of an earlier build of the program to push.
func TestOwnImageRefusesAModuleItCannotName(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=a", "-c", "user.email=a@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	module := func(t *testing.T) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/first-agent\n\ngo 1.25\n"), 0o644))
		return dir
	}
	for _, c := range []struct {
		name, want string
		dir        func(t *testing.T) string
	}{
		{"no git work tree", "is no git work tree", module},
		{"no commit", "has no commit yet", func(t *testing.T) string { dir := module(t); git(dir, "init", "-q"); return dir }},
		{"inside another repository", "not its root", func(t *testing.T) string {
			repo := t.TempDir()
			git(repo, "init", "-q")
			require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("x"), 0o644))
			git(repo, "add", "-A")
			git(repo, "commit", "-q", "-m", "x")
			dir := filepath.Join(repo, "agent")
			require.NoError(t, os.Mkdir(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/first-agent\n\ngo 1.25\n"), 0o644))
			return dir
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			images := t.TempDir()
			stale := filepath.Join(images, "node-agent.oci.tar")
			require.NoError(t, os.WriteFile(filepath.Join(images, "digests.txt"), []byte("node-agent old sha256:0\n"), 0o644))
			require.NoError(t, os.WriteFile(stale, []byte("an earlier build"), 0o644))
			cmd := exec.Command(filepath.Join(root, "hack/images.sh"))
			cmd.Env = append(os.Environ(), "IMAGES=node-agent", "MODULE="+c.dir(t), "IMAGES_DIR="+images,
				"IMAGES_TOOL=/nonexistent", "SBOM_TOOL=/nonexistent", "DEBS_DIR=/nonexistent", "IMAGE_BUILDVCS=true")
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "a module whose commit the image cannot name is built:\n%s", out)
			assert.Contains(t, string(out), c.want, "the refusal says why")
			assert.NotContains(t, string(out), "building the binary", "refused before anything is built")
			assert.NoFileExists(t, filepath.Join(images, "digests.txt"), "an earlier build's digests left to push")
			assert.NoFileExists(t, stale, "an earlier build's image left to push")
		})
	}
}
