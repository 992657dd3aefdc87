package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// forwarded is a port-forward to one pod through the API server
// (pods/portforward), as the user: each get opens a stream pair to the
// pod's port on the connection and speaks HTTP/1.1 on it. No local port is
// opened: the streams are dialed directly.
type forwarded struct {
	conn    httpstream.Connection
	port    int
	next    atomic.Int64
	maxPage int // the most of a page read
}

// forward opens a port-forward connection to the pod namespace/name: over
// WebSockets, falling back to SPDY where the API server does not take
// them, as kubectl port-forward does. ctx bounds the upgrade: client-go's
// dialers take no context, so a dial still under way when ctx ends is left
// to finish on its own and its connection closed.
func forward(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, namespace, name string, port int) (*forwarded, error) {
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(name).SubResource("portforward").URL()
	tr, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	spdyStatus := &statusOf{next: tr}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: spdyStatus}, http.MethodPost, u)
	ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg)
	if err != nil {
		return nil, err
	}
	var wsErr error
	fellBack := false
	dialer := portforward.NewFallbackDialerForStreaming(ws, spdyDialer, func(err error) bool {
		wsErr = err
		fellBack = httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		return fellBack
	})
	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		done <- dialed{conn, err}
	}()
	var d dialed
	select {
	case d = <-done:
	case <-ctx.Done():
		go func() {
			if d := <-done; d.conn != nil {
				_ = d.conn.Close()
			}
		}()
		return nil, fmt.Errorf("port-forward to pod %s/%s: %w", namespace, name, ctx.Err())
	}
	if d.err != nil {
		err := fmt.Errorf("port-forward to pod %s/%s: %w", namespace, name, d.err)
		// The last attempt decides: SPDY's (a POST, verb create) when the
		// WebSocket's (a GET, verb get) was refused and SPDY tried.
		switch st, refused := wsRefusal(wsErr); {
		case fellBack && spdyStatus.code() == http.StatusForbidden:
			return nil, &refusedForward{verb: "create", status: spdyStatus.status(), err: err}
		case !fellBack && refused:
			return nil, &refusedForward{verb: "get", status: st, err: err}
		}
		return nil, err
	}
	return &forwarded{conn: d.conn, port: port, maxPage: maxPage}, nil
}

// refusedForward is a port-forward whose upgrade was answered 403: by the
// API server's authorization of the user's request, or by what it asked
// in turn (the kubelet); cluster.forbidden tells which.
type refusedForward struct {
	// verb is the request's: get over WebSockets, create over SPDY.
	verb string
	// status is the answer's, when it was a metav1.Status.
	status *metav1.Status
	err    error
}

func (e *refusedForward) Error() string { return e.err.Error() }
func (e *refusedForward) Unwrap() error { return e.err }

// wsRefusal reports whether the WebSocket upgrade of a port-forward was
// answered 403 with a status, and that status.
func wsRefusal(err error) (*metav1.Status, bool) {
	var up *httpstream.UpgradeFailureError
	var st apierrors.APIStatus
	if errors.As(err, &up) && errors.As(up.Cause, &st) && st.Status().Code == http.StatusForbidden {
		s := st.Status()
		return &s, true
	}
	return nil, false
}

// statusOf is a round tripper that keeps the status code of the last
// answer through it, and the metav1.Status of a 403: the SPDY dialer's
// error keeps only the answer's text.
type statusOf struct {
	next http.RoundTripper
	mu   sync.Mutex
	last int
	st   *metav1.Status
}

func (s *statusOf) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if resp == nil {
		return resp, err
	}
	var st *metav1.Status
	if resp.StatusCode == http.StatusForbidden && resp.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		var v metav1.Status
		if json.Unmarshal(b, &v) == nil && v.Kind == "Status" {
			st = &v
		}
	}
	s.mu.Lock()
	s.last, s.st = resp.StatusCode, st
	s.mu.Unlock()
	return resp, err
}

func (s *statusOf) code() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *statusOf) status() *metav1.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// get GETs path from the pod's port: its status, its body, when it answered (answeredAt): the times of a page
// are told relative to that moment, not to when the body's last byte came; and its headers.
func (f *forwarded) get(ctx context.Context, path string) (int, []byte, time.Time, http.Header, error) {
	id := strconv.FormatInt(f.next.Add(1), 10)
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(f.port))
	h.Set(corev1.PortForwardRequestIDHeader, id)
	errStream, err := f.createStream(ctx, h)
	if err != nil {
		return 0, nil, time.Time{}, nil, fmt.Errorf("opening the port-forward's error stream: %w", err)
	}
	_ = errStream.Close() // nothing is written to it
	forwardErr := make(chan error, 1)
	go func() {
		b, err := io.ReadAll(errStream)
		switch {
		case err != nil:
			forwardErr <- err
		case len(b) > 0:
			forwardErr <- errors.New(strings.TrimSpace(string(b)))
		default:
			forwardErr <- nil
		}
	}()
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := f.createStream(ctx, h)
	if err != nil {
		return 0, nil, time.Time{}, nil, fmt.Errorf("opening the port-forward's data stream: %w", err)
	}
	defer f.conn.RemoveStreams(errStream, data)
	defer data.Reset()

	type result struct {
		code   int
		body   []byte
		at     time.Time
		header http.Header
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, err := http.NewRequest(http.MethodGet, "http://localhost"+path, nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		req.Close = true
		if err := req.Write(data); err != nil {
			done <- result{err: err}
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(data), req)
		if err != nil {
			done <- result{err: err}
			return
		}
		at := answeredAt(resp.Header, time.Now())
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(f.maxPage)+1))
		if err == nil && len(b) > f.maxPage {
			err = fmt.Errorf("its page %s is over %s, more than the plugin reads", path, sizeOf(f.maxPage))
		}
		done <- result{resp.StatusCode, b, at, resp.Header, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			// The pod's side says why first: nothing listens there, say.
			select {
			case ferr := <-forwardErr:
				if ferr != nil {
					return 0, nil, time.Time{}, nil, ferr
				}
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
			}
		}
		return r.code, r.body, r.at, r.header, r.err
	case ferr := <-forwardErr:
		if ferr != nil {
			return 0, nil, time.Time{}, nil, ferr
		}
		// The error stream ended empty: the answer is still to come, within ctx.
		select {
		case r := <-done:
			return r.code, r.body, r.at, r.header, r.err
		case <-ctx.Done():
			return 0, nil, time.Time{}, nil, ctx.Err()
		}
	case <-ctx.Done():
		return 0, nil, time.Time{}, nil, ctx.Err()
	}
}

// maxPage is the most of a page the plugin reads: a cluster controller's status page of 150,000 PUs each with an
// error is about 75 MiB; one over it is told, not read.
const maxPage = 256 << 20

// sizeOf says n bytes in MiB, or in bytes under one.
func sizeOf(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// createStream opens a stream of the port-forward with the headers h, within ctx: a stream the kubelet never
// acknowledges would otherwise wait for the connection's own timeout (30s), past --timeout. Past ctx, the
// port-forward is closed, which ends the wait.
func (f *forwarded) createStream(ctx context.Context, h http.Header) (httpstream.Stream, error) {
	type created struct {
		s   httpstream.Stream
		err error
	}
	c := make(chan created, 1)
	go func() {
		s, err := f.conn.CreateStream(h.Clone())
		c <- created{s, err}
	}()
	select {
	case r := <-c:
		return r.s, r.err
	case <-ctx.Done():
		f.close()
		return nil, ctx.Err()
	}
}

// close ends the port-forward.
func (f *forwarded) close() { _ = f.conn.Close() }

// answeredAt returns when a page answered: the time it says it read what it answers, on the program's clock
// (k8s.TimeHeader), so that its times are told right whatever the two clocks and however long the page takes to
// come; or, from a program that does not say, got, when its response began to come.
func answeredAt(h http.Header, got time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, h.Get(k8s.TimeHeader)); err == nil {
		return t
	}
	return got
}
