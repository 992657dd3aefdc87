package main

// What the plugin says when the API server refuses it: a permission the user lacks is one line that says which;
// a refusal the user cannot fix makes the program "could not be asked".

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explain.md:120, 437-442: a port-forward the user may not create is one
// line that says which permission is missing.
func TestForbiddenPortForwardSaysWhichPermission(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.refuseAllForwards()
	_, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err == nil || !strings.Contains(err.Error(), "forbidden: you may not create pods/portforward in namespace podsweeper") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
}

// explain.md:440-442: "`create` is what `kubectl port-forward` needs, and
// enough: the plugin tries a WebSocket (verb `get`) first, then SPDY
// (`create`), whose answer decides."
func TestCreateIsEnoughForThePortForward(t *testing.T) {
	now := time.Now().UTC()
	api := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	api.wsForbidden = true
	api.handle("podsweeper/agent-a", &anyPages{at: now})
	x, err := api.cluster(5*time.Second).explainPod(context.Background(), "apps", "db", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
	if !strings.Contains(out, "holds no PU of this pod") {
		t.Fatalf("WebSocket refused, SPDY allowed:\n%s", out)
	}
}

// explain.md:123-128: a port-forward the user may not create: one line, forbidden.
func TestForbiddenPortForwardNamesTheRole(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	api.refuseSPDY["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden: User "sre" cannot create resource "pods/portforward"`)
	_, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	want := "forbidden: you may not create pods/portforward in namespace podsweeper: the Role <fullname>-explain of the programs' chart, in namespace podsweeper grants it (docs/operating/explain.md says how to bind it)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
}

// explain.md:426-427 and 437-441: nothing listens (connection refused), the
// kubelet refuses the API server (403, while the user may): could not be
// asked, and the other programs are asked all the same.
func TestCouldNotBeAskedNotForbidden(t *testing.T) {
	agent := &programPages{at: askedAt}
	ctrl := &programPages{at: askedAt, pus: []k8s.PUStatus{idlePUAt(askedAt, firstUID, "apps/web")}}
	api := agentAndController(t, agent, ctrl, workloadPod("apps", "web", firstUID, "node-a"))
	api.noListener = map[string]bool{"podsweeper/agent-a": true}
	x, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	if !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked:") || !strings.Contains(out, "connection refused") ||
		!strings.Contains(out, "PU "+firstUID) {
		t.Fatalf("%s", out)
	}
	api.noListener = nil
	api.refuseSPDY["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden: User "sre" cannot create resource "pods/portforward"`)
	api.fake.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		r := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	x, err = api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err != nil {
		t.Fatalf("the kubelet's refusal is no refusal of the user's: %v", err)
	}
	out = podText(t, x)
	if !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a") {
		t.Fatalf("%s", out)
	}
}

// explain.md:442-447: when no SelfSubjectAccessReview can be made, the
// refusal's own status decides.
func TestForbiddenFromTheStatusWithoutReview(t *testing.T) {
	api := agentAndController(t, &programPages{at: askedAt}, &programPages{at: askedAt}, workloadPod("apps", "web", firstUID, "node-a"))
	api.refuseSPDY["podsweeper/agent-a"] = podsForbidden("agent-a", `pods "agent-a" is forbidden: User "sre" cannot create resource "pods/portforward"`)
	api.fake.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("the API server did not answer")
	})
	_, err := api.cluster(5*time.Second).explainPod(testContext(t), "apps", "web", "", "", askedAt)
	if err == nil || !strings.HasPrefix(err.Error(), "forbidden: you may not create pods/portforward in namespace podsweeper") {
		t.Fatalf("got %v", err)
	}
}

// docs/operating/explain.md:125-131: without a permission, one line "forbidden: you may not create
// pods/portforward in namespace podsweeper: ...", exit 1.
func TestForbiddenPortForwardOneLine(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
	c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{}, ""))
	c.deny = func(verb, resource, ns string) bool { return resource == "pods/portforward" && ns == "podsweeper" }
	code, out, errOut := c.run("explain", "pod", "apps/web").codeOutErr()
	if code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.HasPrefix(errOut, "kubectl-podsweeper: forbidden: you may not create pods/portforward in namespace podsweeper") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// docs/operating/explain.md:452-454: "`forbidden: you may not impersonate users "NAME" (--as): ...`: with
// `--as`, you may not be that user", one line, exit 1.
func TestImpersonationForbiddenOneLine(t *testing.T) {
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.deny = func(verb, resource, ns string) bool { return verb == "impersonate" && resource == "users" }
	code, out, errOut := c.run("--as", "bob", "explain", "pod", "apps/web").codeOutErr()
	if code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.HasPrefix(errOut, `kubectl-podsweeper: forbidden: you may not impersonate users "bob" (--as)`) {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	code, out, errOut = c.run("--as", "bob", "status", "--node", "node-a").codeOutErr()
	if code != 1 || !strings.HasPrefix(errOut, `kubectl-podsweeper: forbidden: you may not impersonate users "bob" (--as)`) {
		t.Fatalf("status: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// docs/operating/explain.md:130-136, :445-449 and doc.go: without a
// permission, one line that says which, exit 1; a kubelet's 403 makes the
// program "could not be asked", the others asked all the same.
func TestForbiddenOneLine(t *testing.T) {
	for _, deny := range []func(v, r, ns string) bool{
		func(v, r, ns string) bool { return r == "pods/portforward" },
		func(v, r, ns string) bool { return r == "events" },
		func(v, r, ns string) bool { return r == "pods" && v == "get" },
		func(v, r, ns string) bool { return v == "impersonate" },
	} {
		a := newFakeAPI(t).spdyOnly().impersonating()
		a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
		a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
		a.deny = deny
		out, errs, code := a.run("explain", "pod", "apps/web", "--as", "alice").outErrCode()
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "kubectl-podsweeper: forbidden: you may not ") {
			t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errs)
		}
	}
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.forwardStatusOf = map[string]*metav1.Status{"podsweeper/agent-a": status(403, metav1.StatusReasonForbidden, "Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)")}
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a") || !strings.Contains(out, "cluster-controller podsweeper/cc-1:\n") {
		t.Errorf("kubelet's 403: exit %d\n%s\n%s", code, out, errs)
	}
}

// docs/operating/explain.md:453-455: "`create` is what `kubectl
// port-forward` needs, and enough: the plugin tries a WebSocket (verb
// `get`) first, then SPDY (`create`), whose answer decides."
func TestCreateIsEnoughFromTheCommandLine(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	a.deny = func(v, r, ns string) bool { return r == "pods/portforward" && v == "get" }
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "PU uid-web-1 of pod apps/web") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// docs/operating/explain.md:433-434: "`could not be asked: ... connection
// refused`: the program's image predates `--status-bind-address`, or its
// pod restarts." The others are asked all the same.
func TestConnectionRefused(t *testing.T) {
	a := newFakeAPI(t).spdyOnly().impersonating()
	a.addPod(*workloadPod("apps", "web", "uid-web-1", "node-a"))
	a.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", nil)
	a.addProgram("podsweeper-cluster-controller", "podsweeper", "cc-1", "node-z", &mapProgram{pus: []map[string]any{mapPU("uid-web-1", "apps/web", "idle")}})
	start := time.Now()
	out, errs, code := a.run("explain", "pod", "apps/web").outErrCode()
	if code != 0 || !strings.Contains(out, "node-agent podsweeper/agent-a (node node-a) could not be asked: ") || !strings.Contains(out, "connection refused") || !strings.Contains(out, "cluster-controller podsweeper/cc-1:\n") {
		t.Errorf("%v exit %d\n%s\n%s", time.Since(start), code, out, errs)
	}
	t.Logf("%v\n%s", time.Since(start), out)
}

// A user who may not create pods/portforward gets a forbiddenError.
func TestForbiddenPortForwardIsAForbiddenError(t *testing.T) {
	now := time.Now().UTC()
	c, _ := clusterAndFake(t, map[string]http.Handler{
		"podsweeper/agent-a": forbiddenForward{},
	}, 5*time.Second, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a"), webPod("node-a"))
	x, err := c.explainPod(context.Background(), "apps", "web", "", "", now)
	if err == nil {
		t.Logf("answer:\n%s", podText(t, x))
	}
	var f *forbiddenError
	if !errors.As(err, &f) || !strings.Contains(err.Error(), "forbidden: you may not") || !strings.Contains(err.Error(), "pods/portforward") {
		t.Fatalf("want a forbidden of pods/portforward, got %v", err)
	}
}

// explain.md:421-425: the kubelet's refusal of the API server (403 though the
// user may port-forward) makes the program "could not be asked"; the others
// are asked all the same.
func TestKubeletRefusalIsCouldNotBeAsked(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"), podsweeperProgram("cluster-controller", "podsweeper", "cc-1", ""))
	answerReviews(e, func(*authorizationv1.ResourceAttributes) bool { return true })
	e.handle("podsweeper/agent-a", &pageFuncs{})
	e.handle("podsweeper/cc-1", &pageFuncs{})
	e.refuse["podsweeper/agent-a"] = forbiddenStatus("Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)")
	x, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := podText(t, x)
	t.Log(out)
	if !strings.Contains(out, "agent-a (node node-a) could not be asked: port-forward to pod podsweeper/agent-a") || !strings.Contains(out, "cc-1 holds no PU") {
		t.Error("kubelet refusal not told as could not be asked")
	}
}

// explain.md:109-110, 426-431: the user's own refusal: one line, forbidden, which permission.
func TestUserRefusalIsForbidden(t *testing.T) {
	e := newFakeCluster(t, podsweeperProgram("node-agent", "podsweeper", "agent-a", "node-a"))
	answerReviews(e, func(a *authorizationv1.ResourceAttributes) bool { return a.Subresource != "portforward" })
	e.handle("podsweeper/agent-a", &pageFuncs{})
	e.refuse["podsweeper/agent-a"] = forbiddenStatus(`pods "agent-a" is forbidden: User "bob" cannot create resource "pods/portforward" in API group "" in the namespace "podsweeper"`)
	_, err := e.c.explainPod(context.Background(), "apps", "web", "", "node-a", time.Now())
	t.Log(err)
	if err == nil || !strings.HasPrefix(err.Error(), "forbidden: you may not create pods/portforward in namespace podsweeper") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v", err)
	}
}

// explain.md:434-436: with --as, a user who may not be that user is told so, in one line.
func TestImpersonationRefusedOnPodRead(t *testing.T) {
	e := newFakeCluster(t)
	e.c.config.Impersonate.UserName = "bob"
	e.fake.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		st := forbiddenStatus(`users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`)
		st.Details = &metav1.StatusDetails{Kind: "users", Name: "bob"}
		return true, nil, &apierrorsStatus{*st}
	})
	_, err := e.c.explainPod(context.Background(), "apps", "web", "", "", time.Now())
	t.Log(err)
	if err == nil || !strings.HasPrefix(err.Error(), `forbidden: you may not impersonate users "bob" (--as)`) {
		t.Errorf("got %v", err)
	}
}

func answerReviews(e *fakeCluster, allowed func(a *authorizationv1.ResourceAttributes) bool) {
	e.fake.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = allowed(r.Spec.ResourceAttributes)
		return true, r, nil
	})
}

// explain.md: without a permission, "the plugin says which, in one line"; `forbidden: you may not impersonate ...`
// means you may not be that user. Impersonating a UID, a user extra or a service account the user may impersonate
// (as the API server asks: a UID and an extra in API group authentication.k8s.io, a service account as its
// serviceaccounts object in its namespace), a refusal of the port-forward names the port-forward, not the
// impersonation; one of the service account names its namespace's serviceaccounts.
func TestAnImpersonationAllowedIsNotBlamedForARefusal(t *testing.T) {
	for name, args := range map[string][]string{
		"a UID":             {"--as", "bob", "--as-uid", "42"},
		"a service account": {"--as", "system:serviceaccount:ci:deployer"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newFakeAPI(t).spdyOnly().impersonating()
			c.addPod(*workloadPod("apps", "web", "u-web", "node-a"))
			c.addProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", statusAndReport([]k8s.PUStatus{}, ""))
			c.deny = func(verb, resource, ns string) bool { return resource == "pods/portforward" && ns == "podsweeper" }
			code, out, errOut := c.run(append(args, "explain", "pod", "apps/web")...).codeOutErr()
			if code != 1 || !strings.HasPrefix(errOut, "kubectl-podsweeper: forbidden: you may not create pods/portforward in namespace podsweeper") {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
			}
		})
	}
	c := newFakeAPI(t).spdyOnly().impersonating()
	c.deny = func(verb, resource, ns string) bool {
		return verb == "impersonate" && resource == "serviceaccounts" && ns == "ci"
	}
	code, out, errOut := c.run("--as", "system:serviceaccount:ci:deployer", "explain", "pod", "apps/web").codeOutErr()
	if code != 1 || !strings.HasPrefix(errOut, `kubectl-podsweeper: forbidden: you may not impersonate serviceaccounts "deployer" in namespace ci (--as)`) {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}
