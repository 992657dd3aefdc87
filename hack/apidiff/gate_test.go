package apidiff_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGateFailsOnUnlistedBreak removes the method (*deletion.Engine).Len from
// a copy of the repository and runs make verify-apidiff there: it fails, and
// says what to write; it still fails with a Breaking entry that names other
// things; it passes once the entry names Len, and prints the compatible
// addition made beside it.
func TestGateFailsOnUnlistedBreak(t *testing.T) {
	for _, tool := range []string{"make", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s is not on PATH: the gate runs as make verify-apidiff, on a copy of git's files", tool)
		}
	}
	dir := copyRepository(t, repositoryRoot(t))
	probeAPIDiff(t, dir)
	release := strings.TrimSpace(readFile(t, filepath.Join(dir, "api", "RELEASE")))
	changelog := filepath.Join(dir, "CHANGELOG.md")
	original := readFile(t, changelog)

	removeMethod(t, filepath.Join(dir, "deletion", "queue.go"), "Engine", "Len")
	writeFile(t, filepath.Join(dir, "deletion", "gate_added.go"),
		"package deletion\n\n// GateAdded is a name the API of "+release+" does not have.\nconst GateAdded = 1\n")

	out, err := verifyAPIDiff(t, dir)
	require.Error(t, err, "a removed method must fail the gate:\n%s", out)
	assert.Contains(t, out, "FAIL: incompatible changes to the API of "+release+" that CHANGELOG.md does not list")
	assert.Contains(t, out, "  deletion: (*Engine).Len: removed\n")
	assert.Contains(t, out, `in the
"### Breaking" section of "## [Unreleased]"`, "the message says where to list the change")
	assert.Contains(t, out, "    - `deletion.Engine.Len`: <what changed, and what to use instead>.\n",
		"the message shows the entry to write")

	// Under Unreleased, names that are not the one removed: a longer one,
	// another method, and Len outside backticks; Len itself only under the
	// Breaking heading of a release, which is past.
	unrelated := withBreaking(t, original, "## [Unreleased]",
		"- `(*Engine).Length` is gone; `Engine.Track` too. Len is unchanged.")
	writeFile(t, changelog, withBreaking(t, unrelated, "## ["+release+"]", "- `Engine.Len` is removed."))
	out, err = verifyAPIDiff(t, dir)
	require.Error(t, err, "a Breaking entry that names other things must not let the gate pass:\n%s", out)
	assert.Contains(t, out, "  deletion: (*Engine).Len: removed\n")

	writeFile(t, changelog, withBreaking(t, original, "## [Unreleased]",
		"- `Engine.Len` is removed: count the PUs of `Engine.Status` instead."))
	out, err = verifyAPIDiff(t, dir)
	require.NoError(t, err, "a Breaking entry that names the removed method lets the gate pass:\n%s", out)
	assert.Contains(t, out, "deletion: incompatible, listed under Breaking: (*Engine).Len: removed\n")
	assert.Contains(t, out, "deletion: compatible: GateAdded: added\n", "compatible changes are printed")
}

// unavailable skips the test, or fails it under CI=true, where the gate
// must be shown to work.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// repositoryRoot is the root of the module, two directories up.
func repositoryRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.Contains(t, readFile(t, filepath.Join(root, "go.mod")), "module github.com/podsweeper/podsweeper\n")
	return root
}

// copyRepository copies the files git knows of (tracked, or new and not
// ignored) as they are in root's work tree into a temporary directory.
func copyRepository(t *testing.T, root string) string {
	t.Helper()
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		unavailable(t, "git ls-files in %s: %v (the test copies the files of a git work tree)", root, err)
	}
	dir := t.TempDir()
	for name := range strings.SplitSeq(strings.TrimRight(string(list), "\x00"), "\x00") {
		src, dst := filepath.Join(root, name), filepath.Join(dir, name)
		info, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not committed yet
		}
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(target, dst))
			continue
		}
		copyFile(t, src, dst, info.Mode().Perm())
	}
	return dir
}

func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// probeAPIDiff skips the test when the pinned apidiff cannot be run (no
// module proxy, say): the gate would then fail for that reason alone.
func probeAPIDiff(t *testing.T, dir string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^APIDIFF_VERSION \?= (\S+)$`).FindStringSubmatch(readFile(t, filepath.Join(dir, "Makefile")))
	require.NotNil(t, m, "the Makefile pins APIDIFF_VERSION")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "golang.org/x/exp/cmd/apidiff@"+m[1], "-h")
	cmd.Dir, cmd.Env = dir, environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable(t, "cannot run apidiff %s: %v\n%s", m[1], err, out)
	}
}

// verifyAPIDiff runs make verify-apidiff in dir, and returns its output and
// its exit error.
func verifyAPIDiff(t *testing.T, dir string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", dir, "verify-apidiff")
	cmd.Env = environ()
	out, err := cmd.CombinedOutput()
	t.Logf("make verify-apidiff: %v\n%s", err, out)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("make verify-apidiff: %v\n%s", err, out)
	}
	return string(out), err
}

// environ is this process's environment without what the make running the
// tests passes down to its children (jobserver, command-line variables),
// which is not for the make of the copy.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// removeMethod deletes the method recv.name, with its doc comment, from the
// Go file at path.
func removeMethod(t *testing.T, path, recv, name string) {
	t.Helper()
	src := readFile(t, path)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	require.NoError(t, err)
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || fn.Name.Name != name || receiverName(fn) != recv {
			continue
		}
		start := fn.Pos()
		if fn.Doc != nil {
			start = fn.Doc.Pos()
		}
		from, to := fset.Position(start).Offset, fset.Position(fn.End()).Offset
		writeFile(t, path, src[:from]+src[to:])
		return
	}
	t.Fatalf("%s has no method (%s).%s any more: make the test remove another exported name", path, recv, name)
}

func receiverName(fn *ast.FuncDecl) string {
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// withBreaking returns changelog with a "### Breaking" section holding entry
// at the top of the section whose heading line starts with heading.
func withBreaking(t *testing.T, changelog, heading, entry string) string {
	t.Helper()
	i := strings.Index(changelog, "\n"+heading)
	require.GreaterOrEqual(t, i, 0, "CHANGELOG.md has no line starting with %q", heading)
	i += 1 + strings.Index(changelog[i+1:], "\n") + 1
	return changelog[:i] + "\n### Breaking\n\n" + entry + "\n" + changelog[i:]
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
