package testcontainerd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// HTTPClient returns an HTTP client whose connections are made in the
// node's network namespace: it reaches what a process of the node serves on
// the node's loopback (a hostNetwork pod's metrics and probes), which the
// host's loopback does not. Each request has 5 s.
func (n *Node) HTTPClient() *http.Client {
	netns := n.netnsPath()
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialIn(ctx, netns, network, addr)
		},
	}}
}

// dialIn connects to addr from the network namespace at path: one OS
// thread moves there, dials, and moves back; a socket stays in the
// namespace it was made in. A thread that cannot move back is left locked,
// so that the Go runtime ends it.
func dialIn(ctx context.Context, path, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		back, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer unix.Close(back)
		target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		var d net.Dialer
		c, derr := d.DialContext(ctx, network, addr)
		if err := unix.Setns(back, unix.CLONE_NEWNET); err != nil {
			if c != nil {
				_ = c.Close()
			}
			done <- result{err: fmt.Errorf("setns back: %w", err)} // the thread stays locked: it dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		done <- result{c: c, err: derr}
	}()
	r := <-done
	return r.c, r.err
}
