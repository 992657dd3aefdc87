package testkube

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// StartAPIServer starts a real kube-apiserver and etcd (from
// KUBEBUILDER_ASSETS, which `make test` sets), stopped when the test ends,
// and returns an admin's config and kubeconfig. Without them the test is
// skipped, except under CI=true, where it fails.
func StartAPIServer(t testing.TB) (*rest.Config, []byte) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with `make test`")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: run `make test` to test against a real API server")
	}
	te := &envtest.Environment{}
	cfg, err := te.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, te.Stop()) })
	return cfg, te.KubeConfig
}

// ApplyKustomization creates every object of dir, in the order of its
// kustomization.yaml's resources, so that the API server validates them,
// each field strictly.
func ApplyKustomization(t testing.TB, c client.Client, dir string) {
	t.Helper()
	var kust struct {
		Resources []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &kust))
	require.NotEmpty(t, kust.Resources)
	for _, f := range kust.Resources {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(b, &u.Object), f)
		require.NoError(t, c.Create(context.Background(), u, client.FieldValidation(metav1.FieldValidationStrict)), f)
	}
}

// ImpersonatingKubeconfig writes kubeconfig, with every user impersonating
// user (a ServiceAccount's "system:serviceaccount:<ns>:<name>"), to a file
// of the test's and returns its path: a process run with it has exactly
// the RBAC of that ServiceAccount.
func ImpersonatingKubeconfig(t testing.TB, kubeconfig []byte, user string) string {
	t.Helper()
	kc, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// FreeAddr returns a loopback address with a port free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// Get returns the body of url when it answers 200 OK within 2 s, and ""
// otherwise (not serving yet, or failing).
func Get(t testing.TB, url string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

// SyncBuffer is a bytes.Buffer that a running process's logs (or a
// logger's goroutines) may write while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// dummyKubeconfig points at an API server nobody needs to reach: loading a
// config reads the file only.
const dummyKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
users:
- name: u
  user:
    token: t
`

// SameRateLimitHoweverGiven checks that a program's restConfig gives the
// client the rate limit qps and burst both when the config comes from
// --kubeconfig (clientcmd, which leaves QPS at 0: client-go's 5 a second)
// and when it comes from $KUBECONFIG (controller-runtime's GetConfig,
// which turns the limit off).
func SameRateLimitHoweverGiven(t testing.TB, restConfig func(kubeconfig string, qps float64, burst int) (*rest.Config, error), qps float64, burst int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(dummyKubeconfig), 0o600))
	byFlag, err := restConfig(path, qps, burst)
	require.NoError(t, err)
	t.Setenv("KUBECONFIG", path)
	byEnv, err := restConfig("", qps, burst)
	require.NoError(t, err)
	for how, c := range map[string]*rest.Config{"--kubeconfig": byFlag, "$KUBECONFIG": byEnv} {
		assert.Equal(t, float32(qps), c.QPS, "QPS through %s", how)
		assert.Equal(t, burst, c.Burst, "burst through %s", how)
		assert.NotZero(t, c.QPS, "QPS 0 is client-go's default of 5 a second (%s)", how)
	}
}
