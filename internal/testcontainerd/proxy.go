package testcontainerd

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// proxy makes the API server, which listens on the host's loopback, reachable
// at the same address inside the node's network namespace: a listener
// opened there, each connection relayed to the host's address from the
// test process (whose other threads stay in the host's namespace). The
// kubeconfigs need no change, and the server's certificate, made for that
// address, still matches. It listens on the node's address too (same
// port), which pods in networks of their own reach through their gateway
// (Node.APIServerAddr).
type proxy struct {
	ls   []net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

// startProxy listens in the network namespace at netns on the address of
// the API server whose URL is host, and on each of also (addresses with
// their port), and relays every connection to the API server.
func startProxy(t testing.TB, netns, host string, also ...string) *proxy {
	t.Helper()
	u, err := url.Parse(host)
	require.NoError(t, err)
	addr := u.Host
	p := &proxy{open: map[net.Conn]bool{}}
	for _, a := range append([]string{addr}, also...) {
		l, err := listenIn(netns, a)
		if err != nil {
			p.close()
		}
		require.NoError(t, err, "listening on %s in the node's network namespace", a)
		p.ls = append(p.ls, l)
		p.wg.Go(func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				p.wg.Go(func() { p.relay(c, addr) })
			}
		})
	}
	return p
}

// listenIn opens a TCP listener on addr in the network namespace at path.
func listenIn(path, addr string) (net.Listener, error) {
	return inNetns(path, func() (net.Listener, error) { return net.Listen("tcp", addr) })
}

// relay copies between c and a new connection to addr until either ends.
func (p *proxy) relay(c net.Conn, addr string) {
	defer c.Close()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer up.Close()
	p.track(c, up)
	defer p.untrack(c, up)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(up, c)
		closeWrite(up)
	})
	_, _ = io.Copy(c, up)
	closeWrite(c)
	wg.Wait()
}

// closeWrite half-closes c, so that the other side sees the end of what
// was relayed.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (p *proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.open[c] = true
	}
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.open, c)
	}
}

// close stops listening, closes every relayed connection and waits for
// the relays to end.
func (p *proxy) close() {
	for _, l := range p.ls {
		_ = l.Close()
	}
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
