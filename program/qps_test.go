package program_test

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/podsweeper/podsweeper/program"
)

// restClientQPS builds a REST client from f.RESTConfig() and returns its rate limiter's QPS,
// 0 when it has none (no client-side limit).
func restClientQPS(t *testing.T, f program.Flags) float32 {
	t.Helper()
	if err := f.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	c, err := f.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		t.Fatal(err)
	}
	if rl := rc.GetRateLimiter(); rl != nil {
		return rl.QPS()
	}
	return 0
}

// Promise (program.Flags, program/program.go: "a negative QPS turns the client-side limit off
// (the API server's priority and fairness decide)"; --help of --kube-api-qps: "negative: no
// client-side limit"; RESTConfig: "sets the client's rate limit to --kube-api-qps and
// --kube-api-burst either way (clientcmd leaves QPS at 0, which client-go reads as 5 a second)").
// Scenario: --kube-api-qps=-1e-50, a negative value Validate accepts.
// Expected: no client-side limit, as with -1. Observed: float32(-1e-50) is -0, which client-go
// reads as 0 and replaces by its default, 5 requests a second (burst 100): the very limit the
// flag's doc says it avoids.
func TestAuditNegativeKubeAPIQPSTurnsTheLimitOff(t *testing.T) {
	f := program.Defaults()
	f.Kubeconfig = unreachableKubeconfig(t)
	f.KubeAPIQPS = -1e-50
	if qps := restClientQPS(t, f); qps != 0 {
		t.Errorf("--kube-api-qps=%v (negative, accepted by Validate): the client is limited to %v requests a second, want no limit", f.KubeAPIQPS, qps)
	}
}

// TestAuditHoldsNegativeKubeAPIQPS: -1 turns the limit off, 50 is 50.
func TestAuditHoldsNegativeKubeAPIQPS(t *testing.T) {
	f := program.Defaults()
	f.Kubeconfig = unreachableKubeconfig(t)
	f.KubeAPIQPS = -1
	if qps := restClientQPS(t, f); qps != 0 {
		t.Errorf("--kube-api-qps=-1: limited to %v, want none", qps)
	}
	f.KubeAPIQPS = 50
	if qps := restClientQPS(t, f); qps != 50 {
		t.Errorf("--kube-api-qps=50: limited to %v", qps)
	}
}

// unreachableKubeconfig writes a kubeconfig whose server answers nothing.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:1"}
  name: c
contexts:
- context: {cluster: c, user: u}
  name: c
current-context: c
users:
- name: u
  user: {token: x}
`
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
