package main

// The second audit's tests run on the auditor's harness (audEnv,
// audit_harness_test.go) through these few names.

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// a2API is an audEnv whose fake clientset is Fake; hangStreams, set
// before Handle, has the streams of the pods handled then never
// acknowledged; wsForbidden has the WebSocket's upgrade refused 403.
type a2API struct {
	*audEnv
	Fake        *fake.Clientset
	hangStreams chan struct{}
	wsForbidden bool
}

func newA2API(t *testing.T, objs ...runtime.Object) *a2API {
	e := newAudEnv(t, objs...)
	return &a2API{audEnv: e, Fake: e.fake}
}

// Handle serves h as the program pod podKey's listener.
func (a *a2API) Handle(podKey string, h http.Handler) {
	a.handle(podKey, h)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hang[podKey] = a.hangStreams != nil
}

// Cluster is the plugin's cluster on this API, each program asked within
// timeout.
func (a *a2API) Cluster(timeout time.Duration) *cluster {
	a.mu.Lock()
	a.audEnv.wsForbidden = a.wsForbidden
	a.mu.Unlock()
	c := *a.c
	c.timeout = timeout
	return &c
}

// Forbid makes the port-forward of every pod answer 403, as the API
// server's authorizer does.
func (a *a2API) Forbid() {
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden","details":{"kind":"pods"}}`))
	})
}
