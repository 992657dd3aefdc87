package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runLocally(args ...string) (int, string, string) {
	var out, errw bytes.Buffer
	code := run(context.Background(), args, &out, &errw)
	return code, out.String(), errw.String()
}

// docs/operating/explain.md:35-37 and :88-89: --help after a command prints its lines and flags, alone every command
// and kubectl's flags, on stdout, status 0; --timeout must be above 0 (exit 2 otherwise); a bad command line is one
// line on stderr, status 2.
func TestAuditHoldsFlags58(t *testing.T) {
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
