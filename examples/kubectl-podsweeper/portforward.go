package main

import (
	"bufio"
	"context"
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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// forwarded is a port-forward to one pod through the API server
// (pods/portforward), as the user: each get opens a stream pair to the
// pod's port on the connection and speaks HTTP/1.1 on it. No local port is
// opened: the streams are dialed directly.
type forwarded struct {
	conn httpstream.Connection
	port int
	next atomic.Int64
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
	dialer := portforward.NewFallbackDialerForStreaming(ws, spdyDialer, func(err error) bool {
		wsErr = err
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
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
		if isForbidden(wsErr) || spdyStatus.code() == http.StatusForbidden {
			return nil, &forbiddenError{verb: "create", resource: "pods/portforward", namespace: namespace,
				role: "the Role <fullname>-explain of the programs' chart, in namespace " + namespace}
		}
		return nil, fmt.Errorf("port-forward to pod %s/%s: %w", namespace, name, d.err)
	}
	return &forwarded{conn: d.conn, port: port}, nil
}

// isForbidden reports whether the WebSocket upgrade of a port-forward was
// refused by the API server's authorization: a 403 status in its answer.
func isForbidden(err error) bool {
	var up *httpstream.UpgradeFailureError
	return errors.As(err, &up) && apierrors.IsForbidden(up.Cause)
}

// statusOf is a round tripper that keeps the status of the last answer
// through it: the SPDY dialer's error keeps only the answer's text.
type statusOf struct {
	next http.RoundTripper
	mu   sync.Mutex
	last int
}

func (s *statusOf) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if resp != nil {
		s.mu.Lock()
		s.last = resp.StatusCode
		s.mu.Unlock()
	}
	return resp, err
}

func (s *statusOf) code() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// get GETs path from the pod's port: its status and body.
func (f *forwarded) get(ctx context.Context, path string) (int, []byte, error) {
	id := strconv.FormatInt(f.next.Add(1), 10)
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(f.port))
	h.Set(corev1.PortForwardRequestIDHeader, id)
	errStream, err := f.conn.CreateStream(h)
	if err != nil {
		return 0, nil, fmt.Errorf("opening the port-forward's error stream: %w", err)
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
	data, err := f.conn.CreateStream(h)
	if err != nil {
		return 0, nil, fmt.Errorf("opening the port-forward's data stream: %w", err)
	}
	defer f.conn.RemoveStreams(errStream, data)
	defer data.Reset()

	type result struct {
		code int
		body []byte
		err  error
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
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		done <- result{resp.StatusCode, b, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			// The pod's side says why first: nothing listens there, say.
			select {
			case ferr := <-forwardErr:
				if ferr != nil {
					return 0, nil, ferr
				}
			case <-time.After(2 * time.Second):
			}
		}
		return r.code, r.body, r.err
	case ferr := <-forwardErr:
		if ferr != nil {
			return 0, nil, ferr
		}
		r := <-done
		return r.code, r.body, r.err
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
}

// close ends the port-forward.
func (f *forwarded) close() { _ = f.conn.Close() }
