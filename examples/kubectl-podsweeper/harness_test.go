package main

// The fake cluster every test of the plugin runs on, and the programs'
// pages it serves.
//
// fakeAPI is an API server over TLS with a kubeconfig: pods, Events,
// SelfSubjectAccessReviews and impersonation, and pods/portforward over
// WebSockets or SPDY, forwarding each stream to a local port that stands
// for a program's status listener; it can refuse WebSockets (as an API
// server before them, or a proxy, does), answer the upgrade late, or
// answer it with a status. The plugin is driven through run().
//
// fakeCluster is the cluster for the plugin's cluster type: a fake
// clientset answers the reads, its CoreV1().RESTClient() a real one of
// forwardServer for the port-forward's URL (hybridCS), and forwardServer
// answers pods/portforward over SPDY, each pod's streams served by an
// http.Handler as the program's listener would. How a port-forward is
// refused (the WebSocket's upgrade answered 400 so that the plugin falls
// back to SPDY, or 403; a pod without a handler 404 or 500), and how its
// streams are served (podStreams: answered whole with a Content-Length,
// whole up to the stream's close, or as written; an error stream closed at
// once, kept open, or telling that nothing listens; streams that hang) is
// the fakeCluster's to say.

import (
	"bufio"
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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/podsweeper/podsweeper/adapters/k8s"
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
	forwardAnswer map[string]relayedAnswer
	// mayImpersonate: the user may impersonate anyone; otherwise a request
	// with Impersonate-User is refused, as the API server refuses it.
	mayImpersonate bool
	// deny, when set, says whether the user may not verb resource ("pods",
	// "pods/portforward", "events", "users") in namespace ns ("" for all
	// namespaces or the cluster): such a request is refused 403, its
	// review denied.
	deny func(verb, resource, ns string) bool
	// forwardDelayOf and forwardStatusOf are forwardDelay and
	// portForwardStatus for one pod ("ns/name").
	forwardDelayOf  map[string]time.Duration
	forwardStatusOf map[string]*metav1.Status
}

// relayedAnswer is an answer's status code and body, as they are sent.
type relayedAnswer struct {
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

// spdyOnly has the WebSocket's upgrade refused, as by an API server
// before WebSockets: the plugin falls back to SPDY.
func (f *fakeAPI) spdyOnly() *fakeAPI {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noWebsockets = true
	return f
}

// impersonating has the user allowed to impersonate, unless deny says not.
func (f *fakeAPI) impersonating() *fakeAPI {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mayImpersonate = true
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
	for _, fb := range f.forbid {
		if strings.HasPrefix(method+" "+path, fb) {
			f.mu.Unlock()
			return false
		}
	}
	f.mu.Unlock()
	// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]]
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 3 || parts[0] != "api" {
		return true
	}
	ns, rest := "", parts[2:]
	if rest[0] == "namespaces" && len(rest) >= 3 {
		ns, rest = rest[1], rest[2:]
	}
	verb, res := "get", rest[0]
	switch {
	case method == http.MethodPost:
		verb = "create"
	case len(rest) == 1:
		verb = "list"
	}
	if len(rest) > 2 {
		res += "/" + rest[2]
	}
	return !f.denied(verb, res, ns)
}

// denied says whether deny refuses verb resource in ns.
func (f *fakeAPI) denied(verb, resource, ns string) bool {
	f.mu.Lock()
	deny := f.deny
	f.mu.Unlock()
	return deny != nil && deny(verb, resource, ns)
}

// review answers a SelfSubjectAccessReview from the fake's refusals.
func (f *fakeAPI) review(w http.ResponseWriter, r *http.Request) {
	// The plugin's clients send protobuf, or JSON.
	var rv authorizationv1.SelfSubjectAccessReview
	body, err := io.ReadAll(r.Body)
	if err == nil {
		_, _, err = scheme.Codecs.UniversalDeserializer().Decode(body, nil, &rv)
	}
	if err != nil || rv.Spec.ResourceAttributes == nil {
		f.t.Errorf("SelfSubjectAccessReview without resource attributes (%s): %v", r.Header.Get("Content-Type"), err)
		writeJSONResp(w, 400, status(400, metav1.StatusReasonBadRequest, "bad review"))
		return
	}
	a := rv.Spec.ResourceAttributes
	f.mu.Lock()
	may := f.mayImpersonate
	f.mu.Unlock()
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	switch {
	case f.denied(a.Verb, res, a.Namespace):
		rv.Status.Allowed = false
	case a.Verb == "impersonate" && (a.Resource == "uids" || a.Resource == "userextras") && a.Group != "authentication.k8s.io",
		a.Verb == "impersonate" && a.Resource == "users" && strings.HasPrefix(a.Name, "system:serviceaccount:"):
		// Not as the API server's impersonation filter asks (a UID and a user extra in authentication.k8s.io, a
		// service account as its serviceaccounts object): no rule grants it.
		rv.Status.Allowed = false
	case a.Verb == "impersonate":
		rv.Status.Allowed = may
	default:
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
		if a.Name == "" {
			// A review of no object: denied when some object of it is.
			f.mu.Lock()
			for _, fb := range f.forbid {
				if strings.HasPrefix(fb, method+" "+path+"/") {
					rv.Status.Allowed = false
				}
			}
			f.mu.Unlock()
		}
	}
	rv.TypeMeta = metav1.TypeMeta{Kind: "SelfSubjectAccessReview", APIVersion: "authorization.k8s.io/v1"}
	writeJSONResp(w, 201, &rv)
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	pods := append([]corev1.Pod{}, f.pods...)
	may := f.mayImpersonate
	f.mu.Unlock()
	if as := r.Header.Get("Impersonate-User"); strings.HasPrefix(as, "system:serviceaccount:") { // asked as its object
		ns, name, _ := strings.Cut(strings.TrimPrefix(as, "system:serviceaccount:"), ":")
		if !may || f.denied("impersonate", "serviceaccounts", ns) {
			st := status(403, metav1.StatusReasonForbidden, fmt.Sprintf(`serviceaccounts %q is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace %q`, name, ns))
			st.Details = &metav1.StatusDetails{Kind: "serviceaccounts", Name: name}
			writeJSONResp(w, 403, st)
			return
		}
	} else if as != "" && (!may || f.denied("impersonate", "users", "")) {
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
		for _, req := range sel.Requirements() {
			switch req.Field {
			case "involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.uid", "reason", "type", "metadata.namespace":
			default:
				f.t.Errorf("the plugin lists Events by a field the API server does not select them by: %q", req.Field)
			}
		}
		f.mu.Lock()
		for _, e := range f.events {
			if (ns == "" || e.Namespace == ns) && sel.Matches(fields.Set{"involvedObject.kind": e.InvolvedObject.Kind,
				"involvedObject.name": e.InvolvedObject.Name, "involvedObject.namespace": e.InvolvedObject.Namespace,
				"involvedObject.uid": string(e.InvolvedObject.UID), "reason": e.Reason, "type": e.Type, "metadata.namespace": e.Namespace}) {
				l.Items = append(l.Items, e)
			}
		}
		f.mu.Unlock()
		writeJSONResp(w, 200, l)
	case rest[0] == "pods" && len(rest) == 1:
		l := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			writeJSONResp(w, 400, status(400, metav1.StatusReasonBadRequest, err.Error()))
			return
		}
		for _, p := range pods {
			if (ns == "" || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
				l.Items = append(l.Items, p)
			}
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
	if pd, ok := f.forwardDelayOf[pod]; ok {
		d = pd
	}
	if ps, ok := f.forwardStatusOf[pod]; ok {
		pfs = ps
	}
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

// setAppPods replaces the fake's pods that are not programs' with ps (the programs' stay).
func (f *fakeAPI) setAppPods(ps ...corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keep []corev1.Pod
	for _, p := range f.pods {
		if p.Labels["app.kubernetes.io/name"] != "" {
			keep = append(keep, p)
		}
	}
	f.pods = append(keep, ps...)
}

type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// run runs the plugin's command line against f.
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

// codeOutErr is r's exit status, stdout and stderr.
func (r result) codeOutErr() (int, string, string) { return r.code, r.stdout, r.stderr }

// outErrCode is r's stdout, stderr and exit status.
func (r result) outErrCode() (string, string, int) { return r.stdout, r.stderr, r.code }

// hybridCS is the fake clientset for the API server's objects, with a real
// REST client (pointing at the fake server) for the port-forward's URL.
type hybridCS struct {
	*fake.Clientset
	rc rest.Interface
}

func (c hybridCS) CoreV1() corev1client.CoreV1Interface {
	return hybridCore{c.Clientset.CoreV1(), c.rc}
}

type hybridCore struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c hybridCore) RESTClient() rest.Interface { return c.rc }

var _ kubernetes.Interface = hybridCS{}

// selectEvents has f apply the field selectors of a list of Events, as the
// API server does (a fake clientset ignores them), while enabled says so.
func selectEvents(f *fake.Clientset, enabled func() bool) {
	f.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !enabled() {
			return false, nil, nil
		}
		la := a.(k8stesting.ListAction)
		sel := la.GetListRestrictions().Fields
		obj, err := f.Tracker().List(corev1.SchemeGroupVersion.WithResource("events"), corev1.SchemeGroupVersion.WithKind("Event"), la.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		out := &corev1.EventList{}
		for _, ev := range obj.(*corev1.EventList).Items {
			set := fields.Set{"involvedObject.kind": ev.InvolvedObject.Kind, "involvedObject.name": ev.InvolvedObject.Name,
				"involvedObject.uid": string(ev.InvolvedObject.UID), "involvedObject.namespace": ev.InvolvedObject.Namespace, "reason": ev.Reason}
			if sel == nil || sel.Matches(set) {
				out.Items = append(out.Items, ev)
			}
		}
		return true, out, nil
	})
}

// forwardServer is the fake API server of the port-forwards. upgrade decides each port-forward
// to namespace/name: it answers a refusal on w itself and returns nil, or
// returns how the pod's streams are served. idle, when not 0, ends a
// port-forward no stream has come on for that long.
type forwardServer struct {
	srv     *httptest.Server
	upgrade func(w http.ResponseWriter, r *http.Request, namespace, name string) *podStreams
	idle    time.Duration
	// mu guards handlers, and what the fake cluster keeps beside them.
	mu       sync.Mutex
	handlers map[string]http.Handler // the programs' listeners, by "namespace/name" of their pods
}

func newForwardServer(t *testing.T, idle time.Duration, upgrade func(w http.ResponseWriter, r *http.Request, namespace, name string) *podStreams) *forwardServer {
	s := &forwardServer{upgrade: upgrade, idle: idle, handlers: map[string]http.Handler{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// hybridCluster is the plugin's cluster: the objects of f, the
// port-forwards to this server, each program asked within timeout.
func (s *forwardServer) hybridCluster(t *testing.T, f *fake.Clientset, timeout time.Duration) *cluster {
	t.Helper()
	cfg := &rest.Config{Host: s.srv.URL}
	real, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{config: cfg, cs: hybridCS{f, real.CoreV1().RESTClient()}, timeout: timeout}
}

// setHandler serves h as the listener of the pod of key.
func (s *forwardServer) setHandler(key string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[key] = h
}

// isWebSocket tells the WebSocket's upgrade (a GET, verb get) from SPDY's
// (a POST, verb create).
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// podsForbidden is the API server's refusal of a request on the pod name.
func podsForbidden(name, message string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusForbidden,
		Reason: metav1.StatusReasonForbidden, Message: message, Details: &metav1.StatusDetails{Name: name, Kind: "pods"}}
}

// writeStatus answers code with st, as the API server refuses.
func writeStatus(w http.ResponseWriter, code int, st *metav1.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

// podStreams is how the streams of a pod's port-forward are served.
type podStreams struct {
	h     http.Handler // the program's listener
	reply replyMode
	err   errStreamMode
	data  dataMode
	// hang: the streams are never acknowledged (until the port-forward ends).
	hang bool
	// afterReply: a stream is served once its acknowledgement is sent.
	afterReply bool
}

// replyMode is how an answer is written on its data stream.
type replyMode int

const (
	replyLength    replyMode = iota // whole, with a Content-Length
	replyClose                      // whole, up to the stream's close (Connection: close)
	replyStreaming                  // as the handler writes it (streamingWriter)
)

// errStreamMode is what the fake kubelet does with an error stream.
type errStreamMode int

const (
	errClose   errStreamMode = iota // closed at once, empty: the port is reached
	errOpen                         // kept open, never written
	errRefused                      // "connection refused", then closed: nothing listens on the port
)

// dataMode is what the fake kubelet does with a data stream.
type dataMode int

const (
	dataServe   dataMode = iota // the request read, the handler's answer written
	dataDiscard                 // read to its end and closed unanswered
	dataIgnore                  // never read, never answered
)

var forwardPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/portforward$`)

func (s *forwardServer) serve(w http.ResponseWriter, r *http.Request) {
	m := forwardPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, "not served by this fake: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	p := s.upgrade(w, r, m[1], m[2])
	if p == nil {
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	stop := make(chan struct{})
	defer close(stop)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		if p.hang {
			<-stop
		}
		if p.afterReply {
			go func() { <-replySent; streams <- st }()
			return nil
		}
		streams <- st
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	for {
		var idle <-chan time.Time
		if s.idle > 0 {
			idle = time.After(s.idle)
		}
		select {
		case st := <-streams:
			if st.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
				p.errorStream(st, m[2])
				continue
			}
			switch p.data {
			case dataServe:
				go p.answer(st)
			case dataDiscard:
				go func() { _, _ = io.Copy(io.Discard, st); _ = st.Close() }()
			}
		case <-conn.CloseChan():
			return
		case <-idle:
			return
		}
	}
}

func (p *podStreams) errorStream(st httpstream.Stream, name string) {
	switch p.err {
	case errRefused:
		port := st.Headers().Get(corev1.PortHeader)
		_, _ = fmt.Fprintf(st, "error forwarding port %s to pod %s, uid : failed to execute portforward in network namespace: failed to connect to localhost:%s inside namespace: dial tcp 127.0.0.1:%s: connect: connection refused",
			port, name, port, port)
		_ = st.Close()
	case errClose:
		_ = st.Close()
	}
}

// answer reads one HTTP request from st and answers it with p.h.
func (p *podStreams) answer(st httpstream.Stream) {
	defer st.Close()
	req, err := http.ReadRequest(bufio.NewReader(st))
	if err != nil {
		return
	}
	if p.reply == replyStreaming {
		w := &streamingWriter{w: st, h: http.Header{}}
		p.h.ServeHTTP(w, req)
		w.Flush()
		return
	}
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, req)
	res := rec.Result()
	if p.reply == replyClose {
		res.Close = true
	} else {
		res.ContentLength = int64(rec.Body.Len())
		res.Header.Set("Content-Length", strconv.Itoa(rec.Body.Len()))
	}
	_ = res.Write(st)
}

// streamingWriter is an http.ResponseWriter that writes the response to w as
// it is made, as a program's server does: its header at the first Write or
// Flush, then each Write; the body ends when the stream closes.
type streamingWriter struct {
	w       io.Writer
	h       http.Header
	code    int
	started bool
}

func (s *streamingWriter) Header() http.Header { return s.h }
func (s *streamingWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}

func (s *streamingWriter) start() {
	if s.started {
		return
	}
	s.started = true
	if s.code == 0 {
		s.code = http.StatusOK
	}
	_, _ = fmt.Fprintf(s.w, "HTTP/1.1 %d %s\r\nConnection: close\r\n", s.code, http.StatusText(s.code))
	_ = s.h.Write(s.w)
	_, _ = io.WriteString(s.w, "\r\n")
}

func (s *streamingWriter) Write(b []byte) (int, error) {
	s.start()
	return s.w.Write(b)
}

func (s *streamingWriter) Flush() { s.start() }

// fakeCluster is a cluster for the plugin's cluster type: a fake clientset
// answers the API server's reads (Events by their field selectors, as the
// API server does, unless ignoreFieldSelectors; every
// SelfSubjectAccessReview denied unless allowReviews or a test's reactor
// says otherwise),
// and forwardServer answers pods/portforward, each program pod's streams
// served by its handler (by "namespace/name").
//
// How a port-forward is answered: a refusal of the pod's (refuse), of all
// (refuseAll) or of SPDY's alone (refuseSPDY); the WebSocket's upgrade
// refused 400 so that the plugin falls back to SPDY (403 when
// wsForbidden); a pod without a handler answered missing (404, or 500 as
// when the kubelet cannot be dialed); a handler forbiddenForward refused
// 403 as by the user's RBAC; a pod of noListener told "connection refused"
// on its error stream; a pod's kubelet behaviour (kubelet) may hang its
// streams. The others' answers are written as reply says.
type fakeCluster struct {
	*forwardServer
	t    *testing.T
	fake *fake.Clientset
	// c is the plugin's cluster on this API, each program asked within 10s.
	c *cluster

	refuse     map[string]*metav1.Status // "namespace/name" -> the API server's refusal of its port-forward
	refuseSPDY map[string]*metav1.Status // "namespace/name" -> the refusal of its SPDY upgrade alone
	refuseAll  *metav1.Status            // every port-forward's refusal
	hang       map[string]bool           // "namespace/name" -> its streams are never acknowledged
	kubelet    map[string]kubeletMode    // "namespace/name" -> how the kubelet treats its streams
	noListener map[string]bool           // "namespace/name" -> nothing listens on its port
	// wsForbidden: the WebSocket's upgrade (verb get) is refused 403, as
	// for a user who may create pods/portforward but not get it.
	wsForbidden bool
	// onForward runs at each SPDY port-forward's upgrade, before it is answered.
	onForward func(namespace, name string)
	// forwards are the SPDY port-forwards asked, by "namespace/name".
	forwards []string
	// missing is the status of a port-forward to a pod without a handler.
	missing    int
	reply      replyMode
	errs       errStreamMode
	afterReply bool
	// ignoreFieldSelectors: Events are listed whole, whatever the selector.
	ignoreFieldSelectors bool
	// allowReviews: every SelfSubjectAccessReview is allowed (otherwise
	// denied), unless a test's own reactor answers it.
	allowReviews bool
}

// kubeletMode is how the fake kubelet treats a pod's port-forward streams.
type kubeletMode int

const (
	kubeletServe        kubeletMode = iota
	kubeletCloseErrHang             // close the error stream at once (empty), never answer on data
	kubeletNeverAnswer              // keep the error stream open, never answer on data
)

// newFakeCluster is a cluster of objs whose programs' answers are written
// whole with a Content-Length.
func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	c := &fakeCluster{t: t, refuse: map[string]*metav1.Status{}, refuseSPDY: map[string]*metav1.Status{}, hang: map[string]bool{},
		kubelet: map[string]kubeletMode{}, noListener: map[string]bool{}, missing: http.StatusNotFound}
	c.forwardServer = newForwardServer(t, 0, c.upgrade)
	c.fake = fake.NewClientset(objs...)
	selectEvents(c.fake, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.ignoreFieldSelectors
	})
	c.fake.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		c.mu.Lock()
		r.Status.Allowed = c.allowReviews
		c.mu.Unlock()
		return true, r, nil
	})
	c.c = c.hybridCluster(t, c.fake, 10*time.Second)
	return c
}

// closingAnswers has each answer written whole up to the stream's close,
// each stream served once acknowledged, and a pod without a handler
// answered 500 as when the kubelet cannot be dialed.
func (c *fakeCluster) closingAnswers() *fakeCluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reply, c.afterReply, c.missing = replyClose, true, http.StatusInternalServerError
	return c
}

// allowingReviews has every SelfSubjectAccessReview allowed.
func (c *fakeCluster) allowingReviews() *fakeCluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allowReviews = true
	return c
}

// streamingAnswers has each answer written as its handler writes it.
func (c *fakeCluster) streamingAnswers() *fakeCluster {
	c.reply = replyStreaming
	return c
}

// likeAKubelet has each answer written as its handler writes it, each
// error stream kept open as a kubelet keeps it, and a port-forward no
// stream comes on for a minute ended.
func (c *fakeCluster) likeAKubelet() *fakeCluster {
	c.reply, c.errs, c.idle = replyStreaming, errOpen, time.Minute
	return c
}

// listingEventsWhole has every list of Events answered whole, its field
// selector ignored.
func (c *fakeCluster) listingEventsWhole() *fakeCluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ignoreFieldSelectors = true
	return c
}

// handle serves h as the listener of the program pod key ("namespace/name").
func (c *fakeCluster) handle(key string, h http.Handler) { c.setHandler(key, h) }

// program serves h as the listener of the program pod key, whose kubelet
// treats its streams as mode says.
func (c *fakeCluster) program(key string, mode kubeletMode, h http.Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers[key], c.kubelet[key] = h, mode
}

// refuseAllForwards has every port-forward answered 403, as the API
// server's authorizer does.
func (c *fakeCluster) refuseAllForwards() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuseAll = &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: "forbidden", Details: &metav1.StatusDetails{Kind: "pods"}}
}

// cluster is the plugin's cluster on this API, each program asked within
// timeout, with objs added to the API server's objects.
func (c *fakeCluster) cluster(timeout time.Duration, objs ...runtime.Object) *cluster {
	c.t.Helper()
	for _, o := range objs {
		if err := c.fake.Tracker().Add(o); err != nil {
			c.t.Fatal(err)
		}
	}
	cl := *c.c
	cl.timeout = timeout
	return &cl
}

// inNamespace is the plugin's cluster, each program asked within 5s, its
// programs in namespace ns ("": every one).
func (c *fakeCluster) inNamespace(ns string) *cluster {
	cl := c.cluster(5 * time.Second)
	cl.namespace = ns
	return cl
}

// forbiddenForward as a pod's handler: its port-forward is refused 403 by
// the user's RBAC.
type forbiddenForward struct{}

func (forbiddenForward) ServeHTTP(http.ResponseWriter, *http.Request) {}

func (c *fakeCluster) upgrade(w http.ResponseWriter, r *http.Request, ns, name string) *podStreams {
	key := ns + "/" + name
	c.mu.Lock()
	h, st, all, spdySt, mode, hang, none, on, wsForbidden := c.handlers[key], c.refuse[key], c.refuseAll, c.refuseSPDY[key], c.kubelet[key],
		c.hang[key], c.noListener[key], c.onForward, c.wsForbidden
	c.mu.Unlock()
	if all != nil {
		st = all
	}
	if _, ok := h.(forbiddenForward); ok {
		st = podsForbidden(name, `pods "`+name+`" is forbidden: User "bob" cannot create resource "pods/portforward"`)
	}
	switch {
	case st != nil:
		writeStatus(w, int(st.Code), st)
		return nil
	case isWebSocket(r) && wsForbidden:
		writeStatus(w, http.StatusForbidden, forbiddenStatus(`pods "x" is forbidden: cannot get resource "pods/portforward"`))
		return nil
	case isWebSocket(r) || r.Method != http.MethodPost:
		http.Error(w, "no websockets here", http.StatusBadRequest) // the client falls back to SPDY
		return nil
	}
	c.mu.Lock()
	c.forwards = append(c.forwards, key)
	c.mu.Unlock()
	if spdySt != nil {
		writeStatus(w, int(spdySt.Code), spdySt)
		return nil
	}
	if on != nil {
		on(ns, name)
	}
	switch {
	case h == nil:
		http.Error(w, "error dialing backend: no such pod", c.missing)
		return nil
	case mode == kubeletCloseErrHang:
		return &podStreams{err: errClose, data: dataIgnore}
	case mode == kubeletNeverAnswer:
		return &podStreams{err: errOpen, data: dataIgnore}
	case none:
		return &podStreams{err: errRefused, data: dataDiscard}
	}
	return &podStreams{h: h, reply: c.reply, err: c.errs, hang: hang, afterReply: c.afterReply}
}

// forbiddenStatus is the API server's 403 with msg.
func forbiddenStatus(msg string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 403,
		Reason: metav1.StatusReasonForbidden, Message: msg}
}

// clusterServing is the plugin's cluster of objs, each program asked within
// 10s, whose program pods answer handlers ("namespace/name") whole up to
// the stream's close.
func clusterServing(t *testing.T, handlers map[string]http.Handler, objs ...runtime.Object) *cluster {
	t.Helper()
	c := newFakeCluster(t, objs...).closingAnswers()
	for k, h := range handlers {
		c.handle(k, h)
	}
	return c.c
}

// clusterAndFake is the plugin's cluster of objs, each program asked within
// timeout, whose program pods answer handlers ("namespace/name") once each
// stream is acknowledged; and its fake clientset.
func clusterAndFake(t *testing.T, handlers map[string]http.Handler, timeout time.Duration, objs ...runtime.Object) (*cluster, *fake.Clientset) {
	t.Helper()
	c := newFakeCluster(t, objs...)
	c.afterReply = true
	for k, h := range handlers {
		c.handle(k, h)
	}
	return c.cluster(timeout), c.fake
}

// programPod is a pod of a program: its chart's labels (name chart,
// instance release), its container's args.
func programPod(chart, release, ns, name, node string, phase corev1.PodPhase, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": release}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Args: args}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// runningProgram is a Running pod of a program's chart, release "rel".
func runningProgram(chart, ns, name, node string, args ...string) *corev1.Pod {
	return programPod(chart, "rel", ns, name, node, corev1.PodRunning, args...)
}

// podsweeperProgram is a Running pod of the chart podsweeper-<prog>,
// release prog.
func podsweeperProgram(prog, ns, name, node string, args ...string) *corev1.Pod {
	return programPod("podsweeper-"+prog, prog, ns, name, node, corev1.PodRunning, args...)
}

// workloadPod is a Running pod of a workload.
func workloadPod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// The UIDs of a pod and of the pod after it.
const (
	firstUID  = "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"
	secondUID = "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30"
)

// clockNow is "now" on every clock of the tests that fix it.
var clockNow = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// testContext is a test's context, ended with the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustContain says so when out lacks want.
func mustContain(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q", want)
	}
}

// mustJSON marshals v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// askedAt is when the tests that fix it ask.
var askedAt = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)

// idlePU is an idle PU of pod (namespace/name) under uid, checked 5s
// before clockNow.
func idlePU(uid, pod string) k8s.PUStatus { return idlePUAt(clockNow, uid, pod) }

// idlePUAt is an idle PU of pod (namespace/name) under uid, checked 5s
// before now.
func idlePUAt(now time.Time, uid, pod string) k8s.PUStatus {
	c := now.Add(-5 * time.Second)
	return k8s.PUStatus{PUID: uid, Pod: pod, State: "idle", Age: "4m0s", LastChecked: &c, LastRow: 9, Why: "same pod, same sandbox"}
}

// statusPage is a program answering its status page with pus at clockNow,
// engine its engine's state, and no dry run.
func statusPage(t *testing.T, engine string, pus ...k8s.PUStatus) http.Handler {
	t.Helper()
	if pus == nil {
		pus = []k8s.PUStatus{}
	}
	return servePages(clockNow, engine, map[string]rawAnswer{k8s.StatusPath: {code: 200, body: mustJSON(t, pus)}})
}

// dryRunPage is a dry run's report page.
type dryRunPage struct {
	Total   int                `json:"total"`
	Reports []k8s.WouldDestroy `json:"reports"`
}

// programPages serves a program's pages, each with the TimeHeader at
// (zero: the request's time; none with noTime, as an older program): its
// status page (pus; status, when not 0, answers it with body instead;
// delay holds it; the EngineHeader engine, when not ""), its dry run's
// report (dry; nil: 404), cni-gc's address page (addresses by ip, an
// address not there answered as unknown; nil: 404). onStatus and onDry
// run as their page is asked, hook as any is; calls counts them by path.
type programPages struct {
	mu        sync.Mutex
	at        time.Time
	noTime    bool
	engine    string
	pus       []k8s.PUStatus
	status    int
	body      string
	delay     time.Duration
	dry       *dryRunPage
	addresses map[string]*AddressStatus
	onStatus  func()
	onDry     func()
	hook      func(path string)
	calls     map[string]int
}

func (p *programPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	p.calls[r.URL.Path]++
	at, pus, code, body, dry, addrs, delay, hook, onStatus, onDry := p.at, p.pus, p.status, p.body, p.dry, p.addresses, p.delay, p.hook, p.onStatus, p.onDry
	noTime, engine := p.noTime, p.engine
	p.mu.Unlock()
	if hook != nil {
		hook(r.URL.Path)
	}
	if at.IsZero() {
		at = time.Now().UTC()
	}
	if !noTime {
		w.Header().Set(k8s.TimeHeader, at.Format(time.RFC3339Nano))
	}
	switch r.URL.Path {
	case k8s.StatusPath:
		if onStatus != nil {
			onStatus()
		}
		if engine != "" {
			w.Header().Set(k8s.EngineHeader, engine)
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		if code != 0 {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
			return
		}
		if pus == nil {
			pus = []k8s.PUStatus{}
		}
		_ = json.NewEncoder(w).Encode(pus)
	case k8s.DryRunPath:
		if onDry != nil {
			onDry()
		}
		if dry == nil {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(dry)
	case addressPath:
		if addrs == nil {
			http.NotFound(w, r)
			return
		}
		st := addrs[r.URL.Query().Get("ip")]
		if st == nil {
			st = &AddressStatus{IP: r.URL.Query().Get("ip")}
		}
		_ = json.NewEncoder(w).Encode(st)
	default:
		http.NotFound(w, r)
	}
}

// rawPages is a program's pages: path (without query) -> its answer, each
// with the TimeHeader at (zero: none) and the EngineHeader engine (when
// not "").
type rawPages struct {
	at     time.Time
	engine string
	pages  map[string]rawAnswer
}

// rawAnswer is a page's status code and body, answered after delay.
type rawAnswer struct {
	code  int
	body  string
	delay time.Duration
}

// servePages is a program answering pages, at on its clock.
func servePages(at time.Time, engine string, pages map[string]rawAnswer) http.Handler {
	return rawPages{at: at, engine: engine, pages: pages}
}

func (p rawPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, ok := p.pages[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if a.delay > 0 {
		time.Sleep(a.delay)
	}
	if !p.at.IsZero() {
		w.Header().Set(k8s.TimeHeader, p.at.Format(time.RFC3339Nano))
	}
	if p.engine != "" {
		w.Header().Set(k8s.EngineHeader, p.engine)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	_, _ = io.WriteString(w, a.body)
}

// pageFuncs serves a program's status page and, when report is not nil,
// its dry run's report, and cni-gc's address page when address is not
// nil; delay holds each answer of the page named; requests, when not
// nil, is told each page asked.
type pageFuncs struct {
	status   func() []byte
	report   func() []byte
	address  func(ip string) []byte
	delay    map[string]time.Duration
	requests chan string
}

func (p *pageFuncs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.requests != nil {
		select {
		case p.requests <- r.URL.Path:
		default:
		}
	}
	if d := p.delay[r.URL.Path]; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	var b []byte
	switch r.URL.Path {
	case k8s.StatusPath:
		if p.status == nil {
			b = []byte("[]")
		} else {
			b = p.status()
		}
	case k8s.DryRunPath:
		if p.report == nil {
			http.NotFound(w, r)
			return
		}
		b = p.report()
	case addressPath:
		if p.address == nil {
			http.NotFound(w, r)
			return
		}
		b = p.address(r.URL.Query().Get("ip"))
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// mapPages is a program's status listener: its status page (pus, [] for
// none, as the page writes it) and, when report is not nil, its dry run's
// report.
func mapPages(pus []map[string]any, report map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == k8s.StatusPath:
			if pus == nil {
				pus = []map[string]any{}
			}
			_ = json.NewEncoder(w).Encode(pus)
		case r.URL.Path == k8s.DryRunPath && report != nil:
			_ = json.NewEncoder(w).Encode(report)
		default:
			http.NotFound(w, r)
		}
	})
}

// holding is a program's status listener holding pus, with no dry run.
func holding(pus ...map[string]any) http.Handler { return mapPages(pus, nil) }

// jsonPages is a program answering its status page with pus (JSON text)
// and its dry run's page with dry (404 when "").
func jsonPages(pus, dry string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case k8s.StatusPath:
			_, _ = w.Write([]byte(pus))
		case k8s.DryRunPath:
			if dry == "" {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(dry))
		default:
			http.NotFound(w, r)
		}
	})
}

// onFirstRequest runs f once, on h's first request, before h answers.
func onFirstRequest(h http.Handler, f func()) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(f)
		h.ServeHTTP(w, r)
	})
}

// statusAndReport is a program's status listener: its status page, and its dry run's report when report is not "".
func statusAndReport(status any, report string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/podsweeper", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(status)
	})
	if report != "" {
		mux.HandleFunc("/debug/podsweeper/dry-run", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, report)
		})
	}
	return mux
}

// mapProgram is a program's status listener: its status page (pus) and,
// when dryRun, its dry run's report (reports, of total).
type mapProgram struct {
	mu      sync.Mutex
	pus     []map[string]any
	reports []map[string]any
	total   int
	dryRun  bool
	// status, when set, answers the status page instead.
	status http.HandlerFunc
	// onStatus is called as the status page is asked.
	onStatus func()
}

func (p *mapProgram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/debug/podsweeper":
		if p.onStatus != nil {
			p.onStatus()
		}
		if p.status != nil {
			p.status(w, r)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		pus := p.pus
		if pus == nil {
			pus = []map[string]any{}
		}
		_ = json.NewEncoder(w).Encode(pus)
	case "/debug/podsweeper/dry-run":
		if !p.dryRun {
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		reps := p.reports
		if reps == nil {
			reps = []map[string]any{}
		}
		total := p.total
		if total < len(reps) {
			total = len(reps)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"total": total, "reports": reps})
	default:
		http.NotFound(w, r)
	}
}

func mapPU(uid, pod, state string) map[string]any {
	return map[string]any{"puID": uid, "pod": pod, "state": state, "age": "1m0s"}
}

// apierrorsStatus is a StatusError built from a Status.
type apierrorsStatus struct{ st metav1.Status }

func (e *apierrorsStatus) Error() string         { return e.st.Message }
func (e *apierrorsStatus) Status() metav1.Status { return e.st }

// anyPages serves a program's pages: status (nil: 503 as before the
// Inventory's list), dry run's report (nil: 404), address page.
type anyPages struct {
	at        time.Time // Podsweeper-Time; zero: none (an older program)
	status    any
	report    any
	address   any
	status503 bool
}

func (p *anyPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.at.IsZero() {
		w.Header().Set(k8s.TimeHeader, p.at.UTC().Format(time.RFC3339Nano))
	}
	var v any
	switch r.URL.Path {
	case k8s.StatusPath:
		if p.status503 {
			http.Error(w, "the deletion engine has not listed its Inventory yet: the PUs a restart left are not all known", http.StatusServiceUnavailable)
			return
		}
		v = p.status
		if v == nil {
			v = []k8s.PUStatus{}
		}
	case k8s.DryRunPath:
		v = p.report
	case addressPath:
		v = p.address
	}
	if v == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func destroyEvent(ns, name, kind, objNS, objName, uid string, at time.Time, note string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject:      corev1.ObjectReference{Kind: kind, Namespace: objNS, Name: objName, UID: types.UID(uid)},
		Reason:              k8s.EventReasonDestroyed,
		Type:                corev1.EventTypeNormal,
		Message:             note,
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: "podsweeper",
		Count:               1,
	}
}

const ()

// agentAndController: a node agent on node-a and a cluster controller, each serving p.
func agentAndController(t *testing.T, agent, ctrl *programPages, objs ...runtime.Object) *fakeCluster {
	objs = append(objs,
		runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"),
		runningProgram("podsweeper-cluster-controller", "podsweeper", "ctrl-1", "node-c"))
	api := newFakeCluster(t, objs...).streamingAnswers()
	api.handle("podsweeper/agent-a", agent)
	api.handle("podsweeper/ctrl-1", ctrl)
	return api
}

func etcdMirror() *corev1.Pod {
	p := workloadPod("kube-system", "etcd-node-a", "MIRROR", "node-a")
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "KUBELET"}
	return p
}

// dryRunAgent is a node agent in a dry run answering no PU and the report page reports (JSON).
func dryRunAgent(t *testing.T, reports string) http.Handler {
	return servePages(clockNow, k8s.EngineRunning, map[string]rawAnswer{
		k8s.StatusPath: {code: 200, body: "[]"},
		k8s.DryRunPath: {code: 200, body: reports},
	})
}

func recentPU(uid, pod string) k8s.PUStatus {
	t := time.Now().Add(-5 * time.Second)
	return k8s.PUStatus{PUID: uid, Pod: pod, State: "idle", Age: "4m", LastChecked: &t, LastRow: 9, Why: "same pod, same sandbox"}
}

func webPod(node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: types.UID("6f1c2a4e-0000-0000-0000-000000000001")},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cniGCAnswering is a cni-gc holding no PU whose address page answers
// address, whatever the address asked.
func cniGCAnswering(address any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case k8s.StatusPath:
			_, _ = w.Write([]byte("[]"))
		case addressPath:
			_ = json.NewEncoder(w).Encode(address)
		default:
			http.NotFound(w, r)
		}
	})
}
