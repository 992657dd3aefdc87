package main

// audit5: an independent harness. A fake API server (httptest) answers
// pods, Events, SelfSubjectAccessReviews and pods/portforward (SPDY; the
// WebSocket upgrade is refused as by an API server without it), piping
// each port-forward's data stream to the program pod's own httptest
// server. The plugin is driven by run() with a kubeconfig that names it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/streaming/pkg/httpstream"
)

type a5Cluster struct {
	t     *testing.T
	mu    sync.Mutex
	pods  []corev1.Pod
	evs   []corev1.Event
	pages map[string]*httptest.Server // ns/name of a program's pod: its status listener
	srv   *httptest.Server
	// getPod, when set, may answer a GET of a pod in place of the store (n counts GETs of that pod).
	getPod   func(ns, name string, n int) (*corev1.Pod, bool)
	getCount map[string]int
	// denied: SelfSubjectAccessReviews of "verb resource[/sub] namespace" are denied, and the request itself
	// answered 403 by the API server's authorizer.
	denied map[string]bool
}

func (c *a5Cluster) deny(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.denied == nil {
		c.denied = map[string]bool{}
	}
	c.denied[key] = true
}

func (c *a5Cluster) isDenied(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.denied[key]
}

func forbid(w http.ResponseWriter, verb, resource, name, ns string) {
	st := status(403, metav1.StatusReasonForbidden,
		fmt.Sprintf("%s %q is forbidden: User \"me\" cannot %s resource %q in API group \"\" in the namespace %q", resource, name, verb, resource, ns))
	st.Details = &metav1.StatusDetails{Name: name, Kind: strings.Split(resource, "/")[0]}
	writeJSONResp(w, 403, st)
}

func newA5Cluster(t *testing.T) *a5Cluster {
	c := &a5Cluster{t: t, pages: map[string]*httptest.Server{}, getCount: map[string]int{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *a5Cluster) addPod(p corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods = append(c.pods, p)
}

func (c *a5Cluster) addEvent(e corev1.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, e)
}

// program adds a program's Running pod on node (""), serving h as its status listener.
func (c *a5Cluster) program(chart, ns, name, node string, args []string, h http.Handler) {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "rel"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Args: args}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	c.addPod(p)
	if h != nil {
		s := httptest.NewServer(h)
		c.t.Cleanup(s.Close)
		c.mu.Lock()
		c.pages[ns+"/"+name] = s
		c.mu.Unlock()
	}
}

// pendingProgram adds a program's Pending pod on node.
func (c *a5Cluster) pendingProgram(chart, ns, name, node string) {
	c.addPod(corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "rel"}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	})
}

func notFound(w http.ResponseWriter, kind, name string) {
	st := status(404, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", kind, name))
	st.Details = &metav1.StatusDetails{Name: name, Kind: kind}
	writeJSONResp(w, 404, st)
}

func (c *a5Cluster) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	if u := r.Header.Get("Impersonate-User"); u != "" && c.isDenied("impersonate users ") {
		st := status(403, metav1.StatusReasonForbidden,
			fmt.Sprintf("users %q is forbidden: User \"me\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope", u))
		st.Details = &metav1.StatusDetails{Name: u, Kind: "users"}
		writeJSONResp(w, 403, st)
		return
	}
	switch {
	case r.URL.Path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
		var rev authorizationv1.SelfSubjectAccessReview
		body, _ := io.ReadAll(r.Body)
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &rev); err != nil {
			c.t.Logf("SSAR: %s: %v %q", r.Header.Get("Content-Type"), err, body)
		}
		rev.TypeMeta = metav1.TypeMeta{Kind: "SelfSubjectAccessReview", APIVersion: "authorization.k8s.io/v1"}
		a := rev.Spec.ResourceAttributes
		key := ""
		if a != nil {
			res := a.Resource
			if a.Subresource != "" {
				res += "/" + a.Subresource
			}
			key = a.Verb + " " + res + " " + a.Namespace
		}
		rev.Status.Allowed = !c.isDenied(key)
		writeJSONResp(w, 201, &rev)
		return
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
	default:
		notFound(w, "thing", r.URL.Path)
		return
	}
	rest := parts[2:]
	ns := ""
	if rest[0] == "namespaces" && len(rest) >= 3 {
		ns, rest = rest[1], rest[2:]
	}
	switch {
	case len(rest) == 1 && rest[0] == "pods":
		sel, err := labels.Parse(q.Get("labelSelector"))
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		c.mu.Lock()
		l := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for _, p := range c.pods {
			if (ns == "" || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
				l.Items = append(l.Items, p)
			}
		}
		c.mu.Unlock()
		writeJSONResp(w, 200, &l)
	case len(rest) == 2 && rest[0] == "pods":
		c.mu.Lock()
		c.getCount[ns+"/"+rest[1]]++
		n := c.getCount[ns+"/"+rest[1]]
		hook := c.getPod
		var found *corev1.Pod
		for i := range c.pods {
			if c.pods[i].Namespace == ns && c.pods[i].Name == rest[1] {
				p := c.pods[i]
				found = &p
			}
		}
		c.mu.Unlock()
		if hook != nil {
			if p, ok := hook(ns, rest[1], n); ok {
				found = p
			}
		}
		if found == nil {
			notFound(w, "pods", rest[1])
			return
		}
		found.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		writeJSONResp(w, 200, found)
	case len(rest) == 3 && rest[0] == "pods" && rest[2] == "portforward":
		c.portForward(w, r, ns+"/"+rest[1])
	case len(rest) == 1 && rest[0] == "events":
		sel, err := fields.ParseSelector(q.Get("fieldSelector"))
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		c.mu.Lock()
		l := corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}}
		for _, e := range c.evs {
			set := fields.Set{"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.name": e.InvolvedObject.Name,
				"involvedObject.namespace": e.InvolvedObject.Namespace, "involvedObject.uid": string(e.InvolvedObject.UID),
				"reason": e.Reason, "type": e.Type, "metadata.namespace": e.Namespace}
			if (ns == "" || e.Namespace == ns) && sel.Matches(set) {
				l.Items = append(l.Items, e)
			}
		}
		c.mu.Unlock()
		writeJSONResp(w, 200, &l)
	default:
		notFound(w, "thing", r.URL.Path)
	}
}

// portForward answers a port-forward as the kubelet would, through the API server: SPDY only.
func (c *a5Cluster) portForward(w http.ResponseWriter, r *http.Request, pod string) {
	ns, name, _ := strings.Cut(pod, "/")
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		if c.isDenied("get pods/portforward " + ns) {
			forbid(w, "get", "pods/portforward", name, ns)
			return
		}
		http.Error(w, "websockets not served here", http.StatusBadRequest)
		return
	}
	if c.isDenied("create pods/portforward " + ns) {
		forbid(w, "create", "pods/portforward", name, ns)
		return
	}
	c.mu.Lock()
	page := c.pages[pod]
	c.mu.Unlock()
	forwardStreams(w, r, func(s, es httpstream.Stream) {
		defer s.Close()
		if page == nil {
			if es != nil {
				fmt.Fprintf(es, "an error occurred forwarding to %s: connection refused", pod)
				es.Close()
			}
			return
		}
		nc, err := net.Dial("tcp", page.Listener.Addr().String())
		if err != nil {
			if es != nil {
				fmt.Fprintf(es, "dial: %v", err)
				es.Close()
			}
			return
		}
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(nc, s); done <- struct{}{} }()
		go func() { _, _ = io.Copy(s, nc); done <- struct{}{} }()
		<-done
		nc.Close()
		if es != nil {
			es.Close()
		}
	})
}

// kubeconfig writes a kubeconfig naming the fake API server, namespace "apps".
func (c *a5Cluster) kubeconfig() string { return kubeconfigFor(c.t, c.srv.URL, "apps") }

// run runs the plugin with args against the cluster: its exit status, stdout and stderr.
func (c *a5Cluster) run(args ...string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, append([]string{"--kubeconfig", c.kubeconfig()}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// pages is a program's status listener: its status page, and its dry run's report when report is not "".
func a5Pages(status any, report string) http.Handler {
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
