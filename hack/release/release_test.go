package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// release runs `make release` in dir with args and env, and returns its
// output and whether it succeeded.
func release(t *testing.T, dir string, env []string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "release"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// snapshot is what a dry run must not change: the commit, the tags, the
// work tree.
func snapshot(t *testing.T, dir string) string {
	return git(t, dir, "rev-parse", "HEAD") + "\n" + git(t, dir, "tag", "--list") + "\n" + git(t, dir, "status", "--porcelain")
}

// TestReleaseDryRunChangesNothing: `make release VERSION=v0.2.0` is a dry
// run, which says what it would do and leaves the commit, the tags and the
// files as they were.
func TestReleaseDryRunChangesNothing(t *testing.T) {
	dir := cleanClone(t)
	before := snapshot(t, dir)
	out, ok := release(t, dir, nil, "VERSION=v0.2.0", "RELEASE_DATE=2027-01-15")
	require.True(t, ok, out)
	for _, want := range []string{
		"dry run of v0.2.0",
		`becomes "## [v0.2.0] - 2027-01-15"`,
		"apidiff-base VERSION=v0.2.0: api/v0.2.0/ replaces api/v0.1.0/",
		"version 0.2.0, appVersion v0.2.0",
		`git commit -m "Release v0.2.0" and git tag v0.2.0`,
		"images IMAGE_TAG=v0.2.0",
		"kubectl-podsweeper: the plugin",
		"DRY_RUN=0 does it",
	} {
		assert.Contains(t, out, want)
	}
	assert.Equal(t, before, snapshot(t, dir), "a dry run changes nothing")
}

// TestReleaseRefuses: a malformed version, one not above the last
// release, a tag that exists and a work tree with changes are refused,
// in a dry run as in a real one, and nothing changes.
func TestReleaseRefuses(t *testing.T) {
	dir := cleanClone(t)
	for _, tc := range []struct {
		name, version, want string
		dirty               bool
		env                 []string
	}{
		{name: "no v", version: "0.2.0", want: "VERSION must be a release such as v0.2.0"},
		{name: "not X.Y.Z", version: "v0.2", want: "VERSION must be a release"},
		{name: "a pre-release", version: "v0.2.0-rc.1", want: "VERSION must be a release"},
		{name: "the last release", version: "v0.1.0", want: "not above the last release, v0.1.0"},
		{name: "older", version: "v0.0.9", want: "not above the last release"},
		{name: "a tag that exists", version: "v0.3.0", want: "the tag v0.3.0 exists already"},
		{name: "a dirty tree", version: "v0.2.0", dirty: true, want: "the work tree has changes"},
		{name: "a dirty tree, for real", version: "v0.2.0", dirty: true, env: []string{"DRY_RUN=0"}, want: "the work tree has changes"},
		{name: "DRY_RUN neither 0 nor 1", version: "v0.2.0", env: []string{"DRY_RUN=yes"}, want: "DRY_RUN must be 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.version == "v0.3.0" {
				git(t, dir, "tag", "v0.3.0")
				defer git(t, dir, "tag", "-d", "v0.3.0")
			}
			if tc.dirty {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644))
				defer git(t, dir, "checkout", "README.md")
			}
			before := snapshot(t, dir)
			out, ok := release(t, dir, tc.env, "VERSION="+tc.version)
			assert.False(t, ok, "refused: %s", out)
			assert.Contains(t, out, tc.want)
			assert.Equal(t, before, snapshot(t, dir), "nothing changed")
		})
	}
}

// TestReleaseMovesTheChangelogAndTagsACommit runs a release for real in a
// clone, with the two make targets it calls (apidiff-base and images,
// tested on their own) recorded instead of run: the Unreleased section is
// the release's, under an empty one, the charts and kustomize bases run
// the release's images, and one commit holds it all, tagged.
func TestReleaseMovesTheChangelogAndTagsACommit(t *testing.T) {
	dir := cleanClone(t)
	calls := filepath.Join(t.TempDir(), "calls")
	fakeMake := filepath.Join(t.TempDir(), "make")
	require.NoError(t, os.WriteFile(fakeMake, []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\n"), 0o755))
	unreleased := func(changelog string) string {
		_, rest, ok := strings.Cut(changelog, "## [Unreleased]\n")
		require.True(t, ok)
		body, _, _ := strings.Cut(rest, "\n## [")
		return body
	}
	before, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	require.NoError(t, err)
	head := git(t, dir, "rev-parse", "HEAD")

	cmd := exec.Command("hack/release.sh", "v0.2.0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DRY_RUN=0", "MAKE="+fakeMake, "RELEASE_DATE=2027-01-15")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	b, err := os.ReadFile(calls)
	require.NoError(t, err)
	assert.Equal(t, "--no-print-directory apidiff-base VERSION=v0.2.0\n--no-print-directory images IMAGE_TAG=v0.2.0\n--no-print-directory kubectl-podsweeper\n", string(b))
	after, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	require.NoError(t, err)
	assert.Equal(t, "\nNothing yet.\n", unreleased(string(after)))
	_, released, ok := strings.Cut(string(after), "## [v0.2.0] - 2027-01-15\n")
	require.True(t, ok, "the release's section")
	body, _, _ := strings.Cut(released, "\n## [v0.1.0]")
	assert.Equal(t, strings.TrimSpace(unreleased(string(before))), strings.TrimSpace(body), "what was unreleased is the release's")
	assert.Contains(t, string(after), "[Unreleased]: https://github.com/podsweeper/podsweeper/compare/v0.2.0...HEAD\n[v0.2.0]: https://github.com/podsweeper/podsweeper/releases/tag/v0.2.0\n")

	for _, p := range []string{"node-agent", "cluster-controller", "cni-gc"} {
		chart, err := os.ReadFile(filepath.Join(dir, "examples", p, "chart/Chart.yaml"))
		require.NoError(t, err)
		assert.Contains(t, string(chart), "\nversion: 0.2.0\n")
		assert.Contains(t, string(chart), "\nappVersion: v0.2.0\n")
		kust, err := os.ReadFile(filepath.Join(dir, "examples", p, "deploy/kustomization.yaml"))
		require.NoError(t, err)
		assert.Contains(t, string(kust), "    newTag: v0.2.0\n")
	}
	assert.Equal(t, head, git(t, dir, "rev-parse", "HEAD~1"), "one commit")
	assert.Equal(t, "Release v0.2.0", git(t, dir, "log", "-1", "--format=%s"))
	assert.Equal(t, git(t, dir, "rev-parse", "HEAD"), git(t, dir, "rev-parse", "v0.2.0^{commit}"), "tagged")
	assert.Empty(t, git(t, dir, "status", "--porcelain"), "everything committed")
}
