package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func webPU() map[string]any {
	return map[string]any{"puID": firstUID, "pod": "apps/web", "state": "idle", "age": "1m"}
}

// TestPortForwardFallsBackToSPDY: an API server (or a proxy before it)
// that refuses the WebSocket upgrade of pods/portforward is asked over
// SPDY, as kubectl port-forward does.
func TestPortForwardFallsBackToSPDY(t *testing.T) {
	f := newFakeAPI(t)
	f.noWebsockets = true
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
	r := f.run("status", "--node", "node-a")
	assert.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "could not be asked")
	assert.Contains(t, r.stdout, firstUID)
}

// TestTimeoutBoundsThePortForwardsUpgrade: --timeout bounds each program's
// port-forward from its upgrade on: an API server that answers the upgrade
// late makes the program "could not be asked", within --timeout.
func TestTimeoutBoundsThePortForwardsUpgrade(t *testing.T) {
	f := newFakeAPI(t)
	f.forwardDelay = time.Minute
	f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
	r := f.run("status", "--node", "node-a", "--timeout=2s")
	assert.Equal(t, 0, r.code)
	assert.Less(t, r.took, 15*time.Second)
	assert.Contains(t, r.stdout, "na-1 could not be asked: port-forward to pod podsweeper/na-1: context deadline exceeded")
}

// TestPortForwardForbiddenOnlyOnA403: a port-forward is a refusal of RBAC
// (exit 1, one line) only when the API server answers its upgrade 403, over
// WebSockets or SPDY; any other failure makes the program "could not be
// asked", whatever its text says (here a node and a message with "403").
func TestPortForwardForbiddenOnlyOnA403(t *testing.T) {
	const forbidden = "kubectl-podsweeper: forbidden: you may not create pods/portforward in namespace podsweeper: " +
		"the Role <fullname>-explain of the programs' chart, in namespace podsweeper grants it (docs/operating/explain.md says how to bind it)\n"
	t.Run("not found", func(t *testing.T) {
		f := newFakeAPI(t)
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-403", "node-403", holding(webPU()))
		f.portForwardStatus = status(http.StatusNotFound, metav1.StatusReasonNotFound, `pods "node-403" not found: forbidden`)
		r := f.run("status", "--node", "node-403")
		assert.Equal(t, 0, r.code)
		assert.Empty(t, r.stderr)
		assert.Contains(t, r.stdout, "na-403 could not be asked: port-forward to pod podsweeper/na-403: ")
	})
	t.Run("refused over WebSockets and SPDY", func(t *testing.T) {
		f := newFakeAPI(t)
		f.forbid = []string{"GET /api/v1/namespaces/podsweeper/pods/na-1/portforward", "POST /api/v1/namespaces/podsweeper/pods/na-1/portforward"}
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r := f.run("status", "--node", "node-a")
		assert.Equal(t, 1, r.code)
		assert.Equal(t, forbidden, r.stderr)
	})
	t.Run("refused over SPDY", func(t *testing.T) {
		f := newFakeAPI(t)
		f.noWebsockets = true
		f.forbid = []string{"POST /api/v1/namespaces/podsweeper/pods/na-1/portforward"}
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r := f.run("status", "--node", "node-a")
		assert.Equal(t, 1, r.code)
		assert.Equal(t, forbidden, r.stderr)
	})
}

// TestPortForwardForbiddenOnlyWhenTheUserMayNot: a port-forward answered
// 403 is "forbidden: you may not create pods/portforward" only when the
// user's own authorization refused it; SPDY's answer decides when the
// WebSocket's was refused. A user who may create pods/portforward (what
// kubectl port-forward needs) but not get it, asking a program whose
// kubelet is unreachable, and a kubelet that refuses the API server, make
// the program "could not be asked" with the answer's text, exit 0.
func TestPortForwardForbiddenOnlyWhenTheUserMayNot(t *testing.T) {
	const pf = "/api/v1/namespaces/podsweeper/pods/na-1/portforward"
	unreachable := relayedAnswer{code: http.StatusInternalServerError, contentType: "application/json",
		body: `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"error dialing backend: dial tcp 127.0.0.1:1: connect: connection refused","code":500}`}
	kubelet403 := relayedAnswer{code: http.StatusForbidden, contentType: "text/plain",
		body: "Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)"}
	t.Run("create only, the node live", func(t *testing.T) {
		f := newFakeAPI(t)
		f.forbid = []string{"GET " + pf}
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r := f.run("status", "--node", "node-a")
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout, firstUID)
	})
	t.Run("create only, the kubelet unreachable", func(t *testing.T) {
		f := newFakeAPI(t)
		f.forbid = []string{"GET " + pf}
		f.forwardAnswer = map[string]relayedAnswer{http.MethodPost: unreachable}
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r := f.run("status", "--node", "node-a")
		assert.Equal(t, 0, r.code)
		assert.Empty(t, r.stderr)
		assert.Contains(t, r.stdout, "na-1 could not be asked: port-forward to pod podsweeper/na-1: ")
		assert.Contains(t, r.stdout, "connection refused")
	})
	t.Run("the kubelet refuses the API server", func(t *testing.T) {
		f := newFakeAPI(t)
		f.forwardAnswer = map[string]relayedAnswer{http.MethodGet: kubelet403, http.MethodPost: kubelet403}
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r := f.run("status", "--node", "node-a")
		assert.Equal(t, 0, r.code)
		assert.Empty(t, r.stderr)
		assert.Contains(t, r.stdout, "na-1 could not be asked: port-forward to pod podsweeper/na-1: ")
		assert.Contains(t, r.stdout, "user=kube-apiserver-kubelet-client")
	})
	t.Run("no review: the answer's status decides", func(t *testing.T) {
		const review = "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
		f := newFakeAPI(t)
		f.forbid = []string{review}
		f.forwardAnswer = map[string]relayedAnswer{http.MethodGet: kubelet403, http.MethodPost: kubelet403}
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r := f.run("status", "--node", "node-a")
		assert.Equal(t, 0, r.code, "a 403 whose status names no resource is not the user's RBAC")
		assert.Contains(t, r.stdout, "na-1 could not be asked: port-forward to pod podsweeper/na-1: ")

		f = newFakeAPI(t)
		f.forbid = []string{review, "GET " + pf, "POST " + pf}
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r = f.run("status", "--node", "node-a")
		assert.Equal(t, 1, r.code, "the API server's refusal names pods")
		assert.Contains(t, r.stderr, "forbidden: you may not create pods/portforward in namespace podsweeper")
	})
}
