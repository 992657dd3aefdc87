package main

import (
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/program"
)

// TestStatusPortReadsTheCommandLineAsTheProgramDoes: the port of a
// program's --status-bind-address and its --dry-run are read from its
// pod's command line as the program's flag package reads them, in every
// spelling it takes ("--flag value", "-flag=value", "-flag", the last
// value winning, none after "--" or the first argument that is not a
// flag), not only "--flag=value".
func TestStatusPortReadsTheCommandLineAsTheProgramDoes(t *testing.T) {
	for _, args := range [][]string{
		{"--status-bind-address=127.0.0.1:1", "--status-bind-address", "127.0.0.1:2"},
		{"--status-bind-address=127.0.0.1:1", "-status-bind-address=127.0.0.1:3"},
		{"-status-bind-address", "127.0.0.1:4", "-dry-run"},
		{"--dry-run", "--status-bind-address=127.0.0.1:5"},
		{"-dry-run"},
		{"--dry-run", "--dry-run=false"},
		{"-dry-run=true", "--status-bind-address=0"},
		{"--metrics-secure", "--status-bind-address", "127.0.0.1:7"},
		{"--workers", "3", "--status-bind-address", "127.0.0.1:8", "--dry-run"},
		{"--", "--status-bind-address=127.0.0.1:9", "--dry-run"},
		{"--dry-run=false", "stray", "--dry-run", "--status-bind-address=127.0.0.1:10"},
		{"--status-bind-address=127.0.0.1:11", "--dry-run", "true", "--status-bind-address=127.0.0.1:12"},
	} {
		// The program's own reading: the shared flags, as program.Flags binds them.
		f := program.Defaults()
		fs := flag.NewFlagSet("node-agent", flag.ContinueOnError)
		f.Bind(fs)
		require.NoError(t, fs.Parse(args), "%q", args)
		wantPort := portOf(f.StatusBindAddress)
		if f.StatusBindAddress == program.Off {
			wantPort = ""
		}
		for _, ctr := range []corev1.Container{
			{Name: "node-agent", Args: args},
			{Name: "node-agent", Command: append([]string{"/node-agent"}, args...)},
			{Name: "node-agent", Command: []string{"/node-agent"}, Args: args},
		} {
			port, dryRun := statusPort("node-agent", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}})
			assert.Equal(t, wantPort, port, "the status port of command %q args %q", ctr.Command, ctr.Args)
			assert.Equal(t, f.DryRun, dryRun, "--dry-run of command %q args %q", ctr.Command, ctr.Args)
		}
	}
}

// TestExplainIPSaysADryRunInEverySpelling: cni-gc started with "-dry-run"
// is said by explain ip to be in a dry run, as with "--dry-run".
func TestExplainIPSaysADryRunInEverySpelling(t *testing.T) {
	for _, spelling := range []string{"-dry-run", "--dry-run", "-dry-run=true"} {
		f := newFakeAPI(t)
		f.addProgram("podsweeper-cni-gc", "podsweeper", "gc-1", "node-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case addressPath:
				_, _ = w.Write([]byte(`{"ip":"10.88.0.13"}`))
			case "/debug/podsweeper":
				_, _ = w.Write([]byte(`[]`))
			default:
				http.NotFound(w, r)
			}
		}), spelling)
		r := f.run("explain", "ip", "10.88.0.13", "--node", "node-a")
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout, "cni-gc podsweeper/gc-1 (node node-a), in a dry run (it destroys nothing):", spelling)
	}
}

// TestBoolFlagsAreThePrograms: the plugin's list of each program's bool
// flags (whose next argument is not their value) is the programs' own, as
// their flag sets print them (-h: a bool flag has no value's name).
func TestBoolFlagsAreThePrograms(t *testing.T) {
	dir := t.TempDir()
	bools := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)$`)
	for prog := range boolFlags {
		if prog == "cni-gc" && runtime.GOOS != "linux" {
			continue // adapters/cni builds for Linux only
		}
		bin := filepath.Join(dir, prog)
		build := exec.Command("go", "build", "-o", bin, "../"+prog)
		build.Stderr = os.Stderr
		require.NoError(t, build.Run(), "building %s", prog)
		out, _ := exec.Command(bin, "-h").CombinedOutput()
		require.Contains(t, string(out), "-status-bind-address string", "%s -h prints its flags", prog)
		var got []string
		for _, m := range bools.FindAllStringSubmatch(string(out), -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		assert.Equal(t, got, boolFlags[prog], "the bool flags of %s", prog)
	}
}
