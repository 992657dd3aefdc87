package main

// A fake API server the plugin talks to: pods, Events, and pods/portforward
// over WebSockets or SPDY, forwarding each stream to a local port that
// stands for a program's status listener; it can refuse WebSockets (as an
// API server before them, or a proxy, does), answer the upgrade late, or
// answer it with a status.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

type fakeAPI struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	pods []corev1.Pod
	// events are listed by namespace and by the plugin's field selectors.
	events []corev1.Event
	// forwardTo maps "ns/pod" to the local address its forwarded ports reach.
	forwardTo map[string]string
	// forbid maps "METHOD path-prefix" to a 403.
	forbid       []string
	noWebsockets bool
	// portForwardStatus, when set, answers every pods/portforward.
	portForwardStatus *metav1.Status
	// forwardDelay: the port-forward's upgrade is answered after it.
	forwardDelay time.Duration
	// forwardAnswer, when set for a method (GET: WebSockets, POST: SPDY),
	// answers the pods/portforward of that method the user may make: what
	// the API server relays of its dial of the kubelet.
	forwardAnswer map[string]rawAnswer
	// mayImpersonate: the user may impersonate anyone; otherwise a request
	// with Impersonate-User is refused, as the API server refuses it.
	mayImpersonate bool
}

// rawAnswer is an answer's status code and body, as they are sent.
type rawAnswer struct {
	code              int
	contentType, body string
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, forwardTo: map[string]string{}}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		// An upgrade answered late is still awaited by the dial the
		// plugin gave up on: its connection is cut, not waited for.
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

func (f *fakeAPI) kubeconfig() string { return kubeconfigFor(f.t, f.srv.URL, "apps") }

// kubeconfigFor writes a kubeconfig whose one context reaches the API
// server at server (its certificate not checked) with a token, in
// namespace ns, and returns its path.
func kubeconfigFor(t *testing.T, server, ns string) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	tls := ""
	if strings.HasPrefix(server, "https://") {
		tls = "\n    insecure-skip-tls-verify: true"
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s%s
users:
- name: alice
  user:
    token: alice-token
contexts:
- name: c
  context:
    cluster: c
    user: alice
    namespace: %s
current-context: c
`, server, tls, ns)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeJSONResp(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func status(code int, reason metav1.StatusReason, msg string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: msg}
}

// refusal is the API server's answer to a request its authorizer refused:
// a status Forbidden whose details name the resource and the object.
func refusal(path string) *metav1.Status {
	st := status(403, metav1.StatusReasonForbidden, "forbidden by the fake")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 2 && parts[2] == "namespaces" && len(parts) > 4 {
		parts = parts[4:]
	} else if len(parts) > 2 {
		parts = parts[2:]
	}
	st.Details = &metav1.StatusDetails{Kind: parts[0]}
	if len(parts) > 1 {
		st.Details.Name = parts[1]
	}
	return st
}

// allowed says whether the fake's user may make the request method path.
func (f *fakeAPI) allowed(method, path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fb := range f.forbid {
		if strings.HasPrefix(method+" "+path, fb) {
			return false
		}
	}
	return true
}

// review answers a SelfSubjectAccessReview from the fake's refusals.
func (f *fakeAPI) review(w http.ResponseWriter, r *http.Request) {
	var rv authorizationv1.SelfSubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Spec.ResourceAttributes == nil {
		writeJSONResp(w, 400, status(400, metav1.StatusReasonBadRequest, "bad review"))
		return
	}
	a := rv.Spec.ResourceAttributes
	f.mu.Lock()
	may := f.mayImpersonate
	f.mu.Unlock()
	if a.Verb == "impersonate" {
		rv.Status.Allowed = may
	} else {
		method := http.MethodGet
		if a.Verb == "create" {
			method = http.MethodPost
		}
		path := "/api/v1"
		if a.Namespace != "" {
			path += "/namespaces/" + a.Namespace
		}
		path += "/" + a.Resource
		if a.Name != "" {
			path += "/" + a.Name
		}
		if a.Subresource != "" {
			path += "/" + a.Subresource
		}
		rv.Status.Allowed = f.allowed(method, path)
	}
	rv.TypeMeta = metav1.TypeMeta{Kind: "SelfSubjectAccessReview", APIVersion: "authorization.k8s.io/v1"}
	writeJSONResp(w, 201, &rv)
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	pods := append([]corev1.Pod{}, f.pods...)
	may := f.mayImpersonate
	f.mu.Unlock()
	if as := r.Header.Get("Impersonate-User"); as != "" && !may {
		st := status(403, metav1.StatusReasonForbidden, fmt.Sprintf(`users %q is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`, as))
		st.Details = &metav1.StatusDetails{Kind: "users", Name: as}
		writeJSONResp(w, 403, st)
		return
	}
	if !f.allowed(r.Method, r.URL.Path) {
		writeJSONResp(w, 403, refusal(r.URL.Path))
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" {
		f.review(w, r)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/pods, /api/v1/namespaces/NS/pods[/NAME[/portforward]], events.
	if len(parts) < 3 || parts[0] != "api" || parts[1] != "v1" {
		writeJSONResp(w, 404, status(404, metav1.StatusReasonNotFound, "not found"))
		return
	}
	ns := ""
	rest := parts[2:]
	if rest[0] == "namespaces" && len(rest) >= 3 {
		ns = rest[1]
		rest = rest[2:]
	}
	switch {
	case rest[0] == "events":
		l := &corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}}
		sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
		if err != nil {
			writeJSONResp(w, 400, status(400, metav1.StatusReasonBadRequest, err.Error()))
			return
		}
		f.mu.Lock()
		for _, e := range f.events {
			if (ns == "" || e.Namespace == ns) && sel.Matches(fields.Set{"involvedObject.kind": e.InvolvedObject.Kind,
				"involvedObject.name": e.InvolvedObject.Name, "involvedObject.uid": string(e.InvolvedObject.UID), "reason": e.Reason}) {
				l.Items = append(l.Items, e)
			}
		}
		f.mu.Unlock()
		writeJSONResp(w, 200, l)
	case rest[0] == "pods" && len(rest) == 1:
		l := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		sel := r.URL.Query().Get("labelSelector")
		for _, p := range pods {
			if ns != "" && p.Namespace != ns {
				continue
			}
			if strings.Contains(sel, "app.kubernetes.io/name in") && !strings.Contains(sel, p.Labels["app.kubernetes.io/name"]+",") && !strings.Contains(sel, p.Labels["app.kubernetes.io/name"]+")") {
				continue
			}
			if p.Labels["app.kubernetes.io/name"] == "" && sel != "" {
				continue
			}
			l.Items = append(l.Items, p)
		}
		writeJSONResp(w, 200, l)
	case rest[0] == "pods" && len(rest) == 2:
		for _, p := range pods {
			if p.Namespace == ns && p.Name == rest[1] {
				p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
				writeJSONResp(w, 200, &p)
				return
			}
		}
		writeJSONResp(w, 404, status(404, metav1.StatusReasonNotFound, fmt.Sprintf("pods %q not found", rest[1])))
	case rest[0] == "pods" && len(rest) == 3 && rest[2] == "portforward":
		f.portForward(w, r, ns+"/"+rest[1])
	default:
		writeJSONResp(w, 404, status(404, metav1.StatusReasonNotFound, "not found"))
	}
}

func (f *fakeAPI) portForward(w http.ResponseWriter, r *http.Request, pod string) {
	f.mu.Lock()
	d, pfs := f.forwardDelay, f.portForwardStatus
	ans, ok := f.forwardAnswer[r.Method]
	f.mu.Unlock()
	if pfs != nil {
		writeJSONResp(w, int(pfs.Code), pfs)
		return
	}
	if ok {
		w.Header().Set("Content-Type", ans.contentType)
		w.WriteHeader(ans.code)
		_, _ = io.WriteString(w, ans.body)
		return
	}
	if d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		f.mu.Lock()
		no := f.noWebsockets
		f.mu.Unlock()
		if no {
			// An API server (or a proxy before it) without WebSockets for
			// port-forward: kubectl falls back to SPDY.
			http.Error(w, "no websockets here", http.StatusBadRequest)
			return
		}
		up := gwebsocket.Upgrader{Subprotocols: []string{"SPDY/3.1+portforward.k8s.io"}, CheckOrigin: func(*http.Request) bool { return true }}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		tc := portforward.NewTunnelingConnection("fake", ws)
		conn, err := spdy.NewServerConnection(tc, f.streamHandler(pod))
		if err != nil {
			tc.Close()
			return
		}
		defer conn.Close()
		<-conn.CloseChan()
		return
	}
	f.spdyPortForward(w, r, pod)
}

func (f *fakeAPI) spdyPortForward(w http.ResponseWriter, r *http.Request, pod string) {
	if !httpstream.IsUpgradeRequest(r) {
		http.Error(w, "upgrade required", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, f.streamHandler(pod))
	if conn == nil {
		return
	}
	defer conn.Close()
	<-conn.CloseChan()
}

func (f *fakeAPI) streamHandler(pod string) httpstream.NewStreamHandler {
	f.mu.Lock()
	target := f.forwardTo[pod]
	f.mu.Unlock()
	var mu sync.Mutex
	errStreams := map[string]httpstream.Stream{}
	dataStreams := map[string]httpstream.Stream{}
	pair := func(id string) {
		mu.Lock()
		es, ds := errStreams[id], dataStreams[id]
		if es == nil || ds == nil {
			mu.Unlock()
			return
		}
		delete(errStreams, id)
		delete(dataStreams, id)
		mu.Unlock()
		go func() {
			defer es.Close()
			c, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				fmt.Fprintf(es, "error forwarding port to pod %s: %v", pod, err)
				ds.Close()
				return
			}
			defer c.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(c, ds); done <- struct{}{} }()
			go func() { _, _ = io.Copy(ds, c); done <- struct{}{} }()
			<-done
			ds.Close()
		}()
	}
	return func(s httpstream.Stream, replySent <-chan struct{}) error {
		id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
		mu.Lock()
		if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
			errStreams[id] = s
		} else {
			dataStreams[id] = s
		}
		mu.Unlock()
		go func() { <-replySent; pair(id) }()
		return nil
	}
}

// addProgram adds a Running pod of a chart, whose status listener is h.
func (f *fakeAPI) addProgram(chartName, ns, name, node string, h http.Handler, extraArgs ...string) string {
	var addr string
	if h != nil {
		s := httptest.NewServer(h)
		f.t.Cleanup(s.Close)
		addr = strings.TrimPrefix(s.URL, "http://")
	} else {
		addr = "127.0.0.1:1"
	}
	_, port, _ := net.SplitHostPort(addr)
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chartName, "app.kubernetes.io/instance": "rel"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Args: append([]string{"--status-bind-address=127.0.0.1:" + port}, extraArgs...)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	f.mu.Lock()
	f.pods = append(f.pods, p)
	f.forwardTo[ns+"/"+name] = addr
	f.mu.Unlock()
	return addr
}

func (f *fakeAPI) addEvent(e corev1.Event) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
}

func (f *fakeAPI) addPod(p corev1.Pod) {
	f.mu.Lock()
	f.pods = append(f.pods, p)
	f.mu.Unlock()
}

type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runPlugin runs the plugin's command line against f.
func (f *fakeAPI) run(args ...string) result {
	f.t.Helper()
	f.t.Setenv("HOME", f.t.TempDir())
	var so, se bytes.Buffer
	start := time.Now()
	code := run(context.Background(), append([]string{"--kubeconfig", f.kubeconfig()}, args...), &so, &se)
	r := result{stdout: so.String(), stderr: se.String(), code: code, took: time.Since(start)}
	f.t.Logf("%q: exit %d, took %v\nstdout:\n%s\nstderr:\n%s", args, r.code, r.took, r.stdout, r.stderr)
	return r
}
