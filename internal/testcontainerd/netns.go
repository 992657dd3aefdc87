package testcontainerd

import (
	"context"
	"fmt"
	"io"
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

// dialIn connects to addr from the network namespace at path; a socket
// stays in the namespace it was made in.
func dialIn(ctx context.Context, path, network, addr string) (net.Conn, error) {
	return inNetns(path, func() (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
}

// inNetns runs open on one OS thread moved into the network namespace at
// path, and moves the thread back: whatever socket open makes stays in
// that namespace. A thread that cannot move back is left locked, so that
// the Go runtime ends it with its goroutine, and what open made is closed.
func inNetns[T io.Closer](path string, open func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		fail := func(err error) {
			runtime.UnlockOSThread()
			done <- result{err: err}
		}
		back, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fail(err)
			return
		}
		defer unix.Close(back)
		target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fail(err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			fail(fmt.Errorf("setns: %w", err))
			return
		}
		v, oerr := open()
		if err := unix.Setns(back, unix.CLONE_NEWNET); err != nil {
			if oerr == nil {
				_ = v.Close()
			}
			done <- result{err: fmt.Errorf("setns back: %w", err)} // the thread stays locked: it dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		done <- result{v: v, err: oerr}
	}()
	r := <-done
	return r.v, r.err
}
