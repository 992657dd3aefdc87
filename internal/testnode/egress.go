package testnode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// egress is the API server's way to the nodes (ClusterOptions.NodeEgress):
// an HTTP CONNECT proxy on a unix socket of the test's that the API server's
// "cluster" egress selector dials for every connection to a kubelet
// (pods/log, exec, attach, portforward, the node proxy), and that connects
// it with the dialer a node set (Cluster.DialNodesWith).
type egress struct {
	srv  *http.Server
	mu   sync.Mutex
	dial func(ctx context.Context, addr string) (net.Conn, error)
	wg   sync.WaitGroup
}

// startEgress starts the proxy and points env's API server at it: an
// EgressSelectorConfiguration whose "cluster" connection is HTTPConnect
// over a unix socket to the proxy (over TCP, the API server wants TLS).
func startEgress(t testing.TB, env *envtest.Environment) *egress {
	t.Helper()
	// Not t.TempDir(): a unix socket's path is at most 108 bytes.
	dir, err := os.MkdirTemp("", "egress")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	e := &egress{}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.connect)}
	e.wg.Go(func() { _ = e.srv.Serve(l) })
	t.Cleanup(func() {
		_ = e.srv.Close()
		e.wg.Wait()
	})
	conf := filepath.Join(t.TempDir(), "egress-selector.yaml")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, sock), 0o600))
	env.ControlPlane.GetAPIServer().Configure().Set("egress-selector-config-file", conf)
	return e
}

// connect answers a CONNECT to host:port with a connection from the
// node's dialer, relayed both ways.
func (e *egress) connect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	e.mu.Lock()
	dial := e.dial
	e.mu.Unlock()
	if dial == nil {
		http.Error(w, "no node dialer: Cluster.DialNodesWith was not called", http.StatusBadGateway)
		return
	}
	up, err := dial(r.Context(), r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	_, _ = c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	e.wg.Go(func() {
		defer c.Close()
		defer up.Close()
		var wg sync.WaitGroup
		wg.Go(func() {
			_, _ = io.Copy(up, buf)
			if tc, ok := up.(interface{ CloseWrite() error }); ok {
				_ = tc.CloseWrite()
			}
		})
		_, _ = io.Copy(c, up)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		wg.Wait()
	})
}

// DialNodesWith makes dial the API server's way to the nodes, on a
// cluster started with ClusterOptions.NodeEgress: each connection the API
// server opens to a kubelet (addr: the node's address as the API server
// picks it, its Hostname first, and the kubelet's port) is dial's.
func (c *Cluster) DialNodesWith(t testing.TB, dial func(ctx context.Context, addr string) (net.Conn, error)) {
	t.Helper()
	require.NotNil(t, c.egress, "DialNodesWith needs a cluster started with ClusterOptions.NodeEgress")
	c.egress.mu.Lock()
	defer c.egress.mu.Unlock()
	c.egress.dial = dial
}
