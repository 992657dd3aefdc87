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
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	//lint:ignore SA1019 client-go's port-forward dialers (tools/portforward, transport/spdy) still speak its types
	"k8s.io/apimachinery/pkg/util/httpstream"
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
// them, as kubectl port-forward does.
func forward(cfg *rest.Config, cs kubernetes.Interface, namespace, name string, port int) (*forwarded, error) {
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(name).SubResource("portforward").URL()
	tr, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: tr}, http.MethodPost, u)
	ws, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
	if err != nil {
		return nil, err
	}
	dialer := portforward.NewFallbackDialer(ws, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		if isForbidden(err) {
			return nil, &forbiddenError{verb: "create", resource: "pods/portforward", namespace: namespace,
				role: "the Role <fullname>-explain of the programs' chart, in namespace " + namespace}
		}
		return nil, fmt.Errorf("port-forward to pod %s/%s: %w", namespace, name, err)
	}
	return &forwarded{conn: conn, port: port}, nil
}

// isForbidden reports whether a port-forward's upgrade was refused by the
// API server's authorization (the status of its answer, in the error's
// text: client-go's dialers keep no type for it).
func isForbidden(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "forbidden") || strings.Contains(s, "403")
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
