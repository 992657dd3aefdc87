package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/streaming/pkg/httpstream"
)

// a6API is a small fake API server: pods, Events, SelfSubjectAccessReviews
// and SPDY port-forwards to in-process program handlers.
type a6API struct {
	t        *testing.T
	mu       sync.Mutex
	pods     map[string]*corev1.Pod // ns/name
	events   []corev1.Event
	programs map[string]http.Handler // ns/name of the program's pod -> its status listener
	// deny says whether the user may not verb resource in ns ("" any).
	deny func(verb, resource, ns string) bool
	// onGetPod is called on each GET of a pod (ns/name), before answering.
	onGetPod func(key string, n int)
	gets     map[string]int
	srv      *httptest.Server
	// upgradeDelay delays the port-forward upgrade of a pod (ns/name).
	upgradeDelay map[string]time.Duration
	// kubeletRefuses: the port-forward to these pods (ns/name) is answered 403 by the kubelet, as the API server relays it.
	kubeletRefuses map[string]bool
}

func newA6API(t *testing.T) *a6API {
	a := &a6API{t: t, pods: map[string]*corev1.Pod{}, programs: map[string]http.Handler{}, gets: map[string]int{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *a6API) addPod(p *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods[p.Namespace+"/"+p.Name] = p
}

func a6Pod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// addProgram adds a program's pod (chart podsweeper-<prog>) on node, serving h.
func (a *a6API) addProgram(prog, ns, name, node string, args []string, h http.Handler) {
	p := a6Pod(ns, name, "uid-"+name, node)
	p.Labels = map[string]string{"app.kubernetes.io/name": "podsweeper-" + prog, "app.kubernetes.io/instance": prog}
	p.Spec.Containers[0].Args = args
	a.addPod(p)
	a.mu.Lock()
	a.programs[ns+"/"+name] = h
	a.mu.Unlock()
}

func (a *a6API) forbid(w http.ResponseWriter, verb, resource, ns string) {
	st := status(403, metav1.StatusReasonForbidden, fmt.Sprintf("%s is forbidden: User \"bob\" cannot %s resource %q in namespace %q", resource, verb, resource, ns))
	st.Details = &metav1.StatusDetails{Kind: strings.Split(resource, "/")[0]}
	writeJSONResp(w, 403, st)
}

func (a *a6API) denied(verb, resource, ns string) bool {
	return a.deny != nil && a.deny(verb, resource, ns)
}

func (a *a6API) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if u := r.Header.Get("Impersonate-User"); u != "" && a.denied("impersonate", "users", "") {
		st := status(403, metav1.StatusReasonForbidden,
			fmt.Sprintf("users %q is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope", u))
		st.Details = &metav1.StatusDetails{Kind: "users", Name: u}
		writeJSONResp(w, 403, st)
		return
	}
	switch {
	case r.URL.Path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
		var rev authorizationv1.SelfSubjectAccessReview
		body, _ := io.ReadAll(r.Body)
		if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil); err == nil {
			if v, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
				rev = *v
			}
		}
		ra := rev.Spec.ResourceAttributes
		if ra == nil {
			a.t.Errorf("SelfSubjectAccessReview without resource attributes (%s)", r.Header.Get("Content-Type"))
			http.Error(w, "bad", 400)
			return
		}
		res := ra.Resource
		if ra.Subresource != "" {
			res += "/" + ra.Subresource
		}
		rev.Status.Allowed = !a.denied(ra.Verb, res, ra.Namespace)
		rev.Kind, rev.APIVersion = "SelfSubjectAccessReview", "authorization.k8s.io/v1"
		writeJSONResp(w, 201, &rev)
	case len(parts) == 7 && parts[0] == "api" && parts[4] == "pods" && parts[6] == "portforward":
		a.portForward(w, r, parts[3], parts[5])
	case len(parts) == 6 && parts[0] == "api" && parts[4] == "pods":
		ns, name := parts[3], parts[5]
		if a.denied("get", "pods", ns) {
			a.forbid(w, "get", "pods", ns)
			return
		}
		key := ns + "/" + name
		a.mu.Lock()
		a.gets[key]++
		n, hook := a.gets[key], a.onGetPod
		a.mu.Unlock()
		if hook != nil {
			hook(key, n)
		}
		a.mu.Lock()
		p := a.pods[key]
		a.mu.Unlock()
		if p == nil {
			notFound(w, "pods", name)
			return
		}
		c := p.DeepCopy()
		c.Kind, c.APIVersion = "Pod", "v1"
		writeJSONResp(w, 200, c)
	case (len(parts) == 3 && parts[2] == "pods") || (len(parts) == 5 && parts[4] == "pods"):
		ns := ""
		if len(parts) == 5 {
			ns = parts[3]
		}
		if a.denied("list", "pods", ns) {
			a.forbid(w, "list", "pods", ns)
			return
		}
		l := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		a.mu.Lock()
		for _, p := range a.pods {
			if (ns == "" || p.Namespace == ns) && p.Labels["app.kubernetes.io/name"] != "" {
				l.Items = append(l.Items, *p.DeepCopy())
			}
		}
		a.mu.Unlock()
		writeJSONResp(w, 200, l)
	case (len(parts) == 3 && parts[2] == "events") || (len(parts) == 5 && parts[4] == "events"):
		ns := ""
		if len(parts) == 5 {
			ns = parts[3]
		}
		if a.denied("list", "events", ns) {
			a.forbid(w, "list", "events", ns)
			return
		}
		sel := map[string]string{}
		for _, kv := range strings.Split(r.URL.Query().Get("fieldSelector"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				sel[k] = v
			}
		}
		l := &corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}}
		a.mu.Lock()
		for _, e := range a.events {
			if ns != "" && e.Namespace != ns {
				continue
			}
			ok := true
			for k, v := range sel {
				var got string
				switch k {
				case "involvedObject.kind":
					got = e.InvolvedObject.Kind
				case "involvedObject.name":
					got = e.InvolvedObject.Name
				case "involvedObject.uid":
					got = string(e.InvolvedObject.UID)
				case "reason":
					got = e.Reason
				default:
					a.t.Errorf("unknown field selector %q", k)
				}
				ok = ok && got == v
			}
			if ok {
				l.Items = append(l.Items, e)
			}
		}
		a.mu.Unlock()
		writeJSONResp(w, 200, l)
	default:
		http.NotFound(w, r)
	}
}

func (a *a6API) portForward(w http.ResponseWriter, r *http.Request, ns, name string) {
	verb := "create"
	if r.Method == http.MethodGet {
		verb = "get"
	}
	if a.denied(verb, "pods/portforward", ns) {
		a.forbid(w, verb, "pods/portforward", ns)
		return
	}
	a.mu.Lock()
	kr := a.kubeletRefuses[ns+"/"+name]
	a.mu.Unlock()
	if kr {
		writeJSONResp(w, 403, status(403, metav1.StatusReasonForbidden, "Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)"))
		return
	}
	a.mu.Lock()
	d := a.upgradeDelay[ns+"/"+name]
	a.mu.Unlock()
	if d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if r.Method == http.MethodGet { // no WebSockets here: the client falls back to SPDY
		http.Error(w, "websockets not supported", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	h := a.programs[ns+"/"+name]
	a.mu.Unlock()
	if h == nil {
		http.Error(w, "no such pod", http.StatusNotFound)
		return
	}
	forwardStreams(w, r, func(s, es httpstream.Stream) {
		defer s.Close()
		if es != nil {
			defer es.Close()
		}
		if _, refuses := h.(a6Refuses); refuses && es != nil {
			_, _ = es.Write([]byte("error forwarding port " + s.Headers().Get(corev1.PortHeader) + " to pod " + name + ", uid : failed to connect to localhost:" + s.Headers().Get(corev1.PortHeader) + " inside namespace: dial tcp4 127.0.0.1:" + s.Headers().Get(corev1.PortHeader) + ": connect: connection refused"))
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(s))
		if err != nil {
			return
		}
		rw := &streamingWriter{w: s, h: http.Header{}}
		h.ServeHTTP(rw, req)
		rw.Flush()
	})
}

// kubeconfig writes a kubeconfig of the fake API server, its context's namespace ns.
func (a *a6API) kubeconfig(ns string) string { return kubeconfigFor(a.t, a.srv.URL, ns) }

// run6 runs the plugin against a, returning stdout, stderr and the status.
func (a *a6API) run(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, append(args, "--kubeconfig", a.kubeconfig("apps")), &out, &errb)
	return out.String(), errb.String(), code
}

// a6Program is a program's status listener: its status page and, when
// reports is not nil, its dry run's report.
type a6Program struct {
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

func (p *a6Program) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

func a6PU(uid, pod, state string) map[string]any {
	return map[string]any{"puID": uid, "pod": pod, "state": state, "age": "1m0s"}
}

// a6Refuses is a program whose status listener is not there: the kubelet says so on the error stream.
type a6Refuses struct{}

func (a6Refuses) ServeHTTP(http.ResponseWriter, *http.Request) {}
