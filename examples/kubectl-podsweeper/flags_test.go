package main

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/k8s"
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
			wantPort = portOff
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

// explain.md:35-37: "`--help` after a command (`kubectl podsweeper explain pod --help`) prints that command's lines
// and the flags it reads; `--help` alone prints every command and kubectl's flags (on stdout, status 0)."
func TestHelpOfEachCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(testContext(t), []string{"-n", "podsweeper", "explain", "ip", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("status %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "kubectl podsweeper explain ip ADDRESS --node NODE") || !strings.Contains(out.String(), "--node") ||
		strings.Contains(out.String(), "explain pod --uid") {
		t.Errorf("explain ip --help:\n%s", out.String())
	}
	// Each flag is said as the command reads it, and --timeout's help names no flag the help leaves out.
	for _, want := range []string{"the node whose cni-gc is asked", "--request-timeout"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain ip --help lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "explain pod:") {
		t.Errorf("explain ip --help says what --node means to another command:\n%s", out.String())
	}
	out.Reset()
	if code := run(testContext(t), []string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("status %d", code)
	}
	for _, l := range []string{"explain pod NAMESPACE/NAME", "explain pod --uid UID", "explain ip ADDRESS", "status --node NODE", "report [-o json]", "--kubeconfig", "--context"} {
		if !strings.Contains(out.String(), l) {
			t.Errorf("--help lacks %q", l)
		}
	}
}

// docs/operating/explain.md:35-37 and :88-89: --help after a command prints its lines and flags, alone every command
// and kubectl's flags, on stdout, status 0; --timeout must be above 0 (exit 2 otherwise); a bad command line is one
// line on stderr, status 2.
func TestHelpTimeoutAndBadCommandLine(t *testing.T) {
	if code, out, _ := runLocally("--help"); code != 0 || !strings.Contains(out, "explain ip ADDRESS --node NODE") || !strings.Contains(out, "--kubeconfig") {
		t.Errorf("--help: %d\n%s", code, out)
	}
	if code, out, _ := runLocally("-h"); code != 0 || !strings.Contains(out, "report [-o json]") {
		t.Errorf("-h: %d\n%s", code, out)
	}
	if code, out, _ := runLocally("--node", "explain", "explain", "pod", "--help"); code != 0 || !strings.HasPrefix(out, "kubectl podsweeper explain pod:") ||
		!strings.Contains(out, "--uid") || strings.Contains(out, "--kubeconfig string") {
		t.Errorf("explain pod --help: %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"--timeout=0", "report"}, {"--timeout=-1s", "status", "--node", "n"}, {"-o", "yaml", "report"},
		{"explain", "ip", "10.0.0.1"}, {"explain", "ip", "nope", "--node", "n"}, {"status"}, {"report", "x"},
		{"explain", "pod"}, {"explain", "pod", "a/b/c"}, {"explain", "pod", "/b"}, {"explain"}, {"bogus"}, {"--bogus", "report"},
	} {
		code, out, errs := runLocally(args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 && args[0] != "explain" {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// docs/operating/explain.md:70-71: "When a program could not be asked, or none was found, the answer says that it
// cannot tell what podsweeper knows of the pod, rather than that it knows nothing"; explain.md:31 and :460-461:
// "`--namespace` (`-n`) is **the programs' namespace**", "`forbidden: you may not list pods in every namespace`: name
// the programs' namespace with `-n`". The programs are installed as explain.md's own examples show them: the node agent
// and the cluster controller in podsweeper, cni-gc in kube-system. Told to, the user gives -n podsweeper: cni-gc,
// which holds the gone pod's PU (its destroy fails), is not looked for, not asked and not named, and the answer says
// that podsweeper knows nothing of the pod.
func TestNamespaceFlagKnowsNothing(t *testing.T) {
	c := clusterServing(t, map[string]http.Handler{
		"podsweeper/agent-a":   statusPage(t, k8s.EngineRunning),
		"podsweeper/cc-0":      statusPage(t, k8s.EngineRunning),
		"kube-system/cni-gc-a": statusPage(t, k8s.EngineRunning, idlePU(firstUID, "apps/web")),
	},
		programPod("podsweeper-node-agent", "na", "podsweeper", "agent-a", "node-a", corev1.PodRunning),
		programPod("podsweeper-cluster-controller", "cc", "podsweeper", "cc-0", "node-a", corev1.PodRunning),
		programPod("podsweeper-cni-gc", "cni-gc", "kube-system", "cni-gc-a", "node-a", corev1.PodRunning))
	c.namespace = "podsweeper"
	x, err := c.explainPod(testContext(t), "apps", "web", "", "", clockNow)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := podTextAndJSON(t, x)
	wantNotSays(t, "the text", txt, "podsweeper knows nothing of this pod")
}

// docs/operating/explain.md:26-27: --namespace is the programs' namespace, not the pod's: NAME is in your
// context's namespace.
func TestNamespaceFlagIsTheProgramsNotThePods(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{recentPU("u-web", "apps/web")}, ""))
	code, out, errOut := c.run("-n", "podsweeper", "explain", "pod", "web").codeOutErr()
	if code != 0 || !strings.Contains(out, "Pod apps/web (UID u-web) on node node-a: Running.") || !strings.Contains(out, "PU u-web") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// docs/operating/explain.md:27: "It takes kubectl's flags for the cluster
// (`--kubeconfig`, `--context`, `--as`, ...)". kubectl's flag for the API
// server is `--server`, `-s` for short (kubectl -s URL ...): the plugin
// refuses `-s` as an unknown flag, exit 2.
func TestKubectlServerShorthand(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	// --server works: the same with kubectl's -s must too.
	if out, errs, code := a.run("--server", a.srv.URL, "status", "--node", "node-a").outErrCode(); code != 0 {
		t.Fatalf("--server: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code := a.run("-s", a.srv.URL, "status", "--node", "node-a").outErrCode()
	if code != 0 || !strings.Contains(out, "uid-web-1") {
		t.Errorf("kubectl podsweeper -s %s status --node node-a: exit %d, want 0 and the node's PUs (kubectl's -s is --server)\nstdout:\n%s\nstderr:\n%s", a.srv.URL, code, out, errs)
	}
}

func runLocally(args ...string) (int, string, string) {
	var out, errw bytes.Buffer
	code := run(context.Background(), args, &out, &errw)
	return code, out.String(), errw.String()
}

// The kubelet expands a container's $(VAR) references with its environment before the program starts: the plugin
// reads the port the program listens on, not the text of the pod spec; a port named as a service is its number, as
// the program resolves it; a variable whose value comes from elsewhere (valueFrom) is said so, not taken for a
// listener turned off or for no port.
func TestStatusPortOfAVariableOrAServiceName(t *testing.T) {
	env := []corev1.EnvVar{{Name: "STATUS_ADDR", Value: "127.0.0.1:8084"}, {Name: "STATUS_PORT", Value: "8085"},
		{Name: "FROM_FIELD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	for _, tc := range []struct {
		arg  string
		port int
		why  string
	}{
		{"--status-bind-address=$(STATUS_ADDR)", 8084, ""},
		{"--status-bind-address=127.0.0.1:$(STATUS_PORT)", 8085, ""},
		{"--status-bind-address=127.0.0.1:http", 80, ""},
		{"--status-bind-address=127.0.0.1:$$(STATUS_PORT)", 0, "comes from a variable"},
		{"--status-bind-address=$(FROM_FIELD)", 0, "comes from a variable"},
		{"--status-bind-address=127.0.0.1:no-such-service-name", 0, "has no port"},
		// An address without a port is no listener turned off: "0" alone is.
		{"--status-bind-address=localhost", 0, `has no port: "localhost"`},
		{"--status-bind-address=127.0.0.1:", 0, `has no port: "127.0.0.1:"`},
		{"--status-bind-address=", 0, `has no port: ""`},
		{"--status-bind-address=0", 0, "its status listener is off"},
	} {
		ctr := corev1.Container{Name: "node-agent", Args: []string{tc.arg}, Env: env}
		p, _ := statusPort("node-agent", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}})
		port, why := statusPortNumber(p)
		assert.Equal(t, tc.port, port, tc.arg)
		if tc.why == "" {
			assert.Empty(t, why, tc.arg)
		} else {
			assert.Contains(t, why, tc.why, tc.arg)
		}
	}
}

// explain.md: "It takes kubectl's flags for the cluster (`--kubeconfig`, `--context`, `--as`, ...)"; "the pod is
// `NAMESPACE/NAME`, or `NAME` in your context's namespace". With no kubeconfig at all (a bastion, a CI job), kubectl's
// --server and --token reach the cluster, and NAME alone is read in the namespace kubectl reads it in: default.
func TestANameAloneWithKubectlsServerFlagsAndNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("default", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "default/web", "idle")}})
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"--server", a.srv.URL, "--insecure-skip-tls-verify", "--token", "t", "explain", "pod", "web"}, &out, &errs)
	if code != 0 || !strings.Contains(out.String(), "PU uid-web-1") {
		t.Errorf("explain pod NAME with --server and --token, no kubeconfig: exit %d, want 0 and its PU\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
}
