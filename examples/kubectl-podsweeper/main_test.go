package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// TestCommandLinesRefused: a command line the plugin cannot run is refused
// with status 2 and one line saying why, before anything is asked (no
// kubeconfig is read: there is none here).
func TestCommandLinesRefused(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, args := range [][]string{
		{},
		{"explain"},
		{"explain", "node", "n"},
		{"explain", "pod"},
		{"explain", "pod", "apps/"},
		{"explain", "pod", "/web"},
		{"explain", "pod", "a/b/c"},
		{"explain", "pod", "a/b", "c/d"},
		{"explain", "ip"},
		{"explain", "ip", "10.88.0.4"},
		{"explain", "ip", "nope", "--node", "n"},
		{"explain", "ip", "10.88.0.4", "10.88.0.5", "--node", "n"},
		{"status"},
		{"report", "extra"},
		{"frobnicate"},
		{"report", "-o", "yaml"},
		{"report", "--no-such-flag"},
		{"report", "--node", "n"}, // a flag it does not read: not taken as narrowing it
		{"report", "--node", "n", "--help"},
		{"status", "--node", "n", "--uid", "u"},
		{"explain", "ip", "10.88.0.4", "--node", "n", "--uid", "u"},
	} {
		var out, errs bytes.Buffer
		code := run(context.Background(), args, &out, &errs)
		assert.Equal(t, 2, code, "%q: %s", args, errs.String())
		assert.Empty(t, out.String(), "%q", args)
		assert.Contains(t, errs.String(), "kubectl-podsweeper: usage: ", "%q", args)
	}
	var out, errs bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"status", "--node", "n"}, &out, &errs))
	assert.Contains(t, errs.String(), "no kubeconfig: give --kubeconfig, set KUBECONFIG, or write ~/.kube/config",
		"no kubeconfig at all is said as kubectl's users know it")
	out.Reset()
	errs.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"--help"}, &out, &errs))
	assert.Contains(t, out.String(), "kubectl podsweeper explain pod NAMESPACE/NAME", "help asked for is the answer, on stdout")
	assert.Contains(t, out.String(), "kubectl podsweeper explain ip ADDRESS --node NODE")
	assert.Empty(t, errs.String())
}

// TestForbiddenSaysWhichPermission: a request RBAC refused is said in
// one line that names the verb, the resource, the namespace and the role
// that grants it.
func TestForbiddenSaysWhichPermission(t *testing.T) {
	c := &cluster{config: &rest.Config{}, cs: fake.NewClientset()} // its reviews deny
	ctx := context.Background()
	err := c.refused(ctx, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", nil), "get", "pods", "apps", clusterRole)
	assert.Equal(t, "forbidden: you may not get pods in namespace apps: the ClusterRole <fullname>-explain of the programs' chart "+
		"grants it (docs/operating/explain.md says how to bind it)", err.Error())
	err = c.refused(ctx, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil), "list", "pods", "", clusterRole)
	assert.Contains(t, err.Error(), "forbidden: you may not list pods in every namespace:")
	assert.False(t, strings.Contains(err.Error(), "\n"))
	other := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")
	assert.Equal(t, other, c.refused(ctx, other, "get", "pods", "apps", clusterRole), "only a refusal is turned")
}

// TestForbiddenSaysWhichPermissionWithAs: with --as, a user who may not
// impersonate is told that the permission missing is impersonate users,
// and for whom, not a permission of the user's own; a user who may is
// answered as the one impersonated.
func TestForbiddenSaysWhichPermissionWithAs(t *testing.T) {
	const want = `kubectl-podsweeper: forbidden: you may not impersonate users "erin" (--as): the programs' charts grant no impersonation; ` +
		"a ClusterRole that grants impersonate on users, bound to you, does\n"
	for _, args := range [][]string{
		{"--as", "erin", "-n", "podsweeper", "status", "--node", "node-a"},
		{"--as", "erin", "-n", "podsweeper", "explain", "pod", "apps/web"},
		{"--as", "erin", "report"},
	} {
		f := newFakeAPI(t)
		f.addProgram("podsweeper-node-agent", "podsweeper", "na-1", "node-a", holding(webPU()))
		r := f.run(args...)
		assert.Equal(t, 1, r.code, "%q", args)
		assert.Equal(t, want, r.stderr, "%q", args)
		assert.Empty(t, r.stdout)

		// The review cannot be made: the refusal's status names the impersonation.
		f.forbid = []string{"POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"}
		r = f.run(args...)
		assert.Equal(t, 1, r.code, "%q", args)
		assert.Equal(t, want, r.stderr, "%q", args)

		f.forbid = nil
		f.mayImpersonate = true
		r = f.run(args...)
		assert.Equal(t, 0, r.code, "%q", args)
		assert.Empty(t, r.stderr)
	}
}

// TestStatusPortFromTheCommandLine: the port of a program's status
// listener is read from its container's arguments, the program's default
// without; "0" turns it off.
func TestStatusPortFromTheCommandLine(t *testing.T) {
	pod := func(args ...string) corev1.Pod {
		return corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Args: args}}}}
	}
	for _, c := range []struct {
		program string
		args    []string
		port    string
		dryRun  bool
	}{
		{"node-agent", nil, "8084", false},
		{"cluster-controller", []string{"--dry-run=true"}, "8084", true},
		{"cni-gc", []string{"--dry-run"}, "9813", true},
		{"node-agent", []string{"--status-bind-address=127.0.0.1:9999", "--dry-run=false"}, "9999", false},
		{"node-agent", []string{"--status-bind-address=[::1]:7000"}, "7000", false},
		{"cni-gc", []string{"--status-bind-address=0"}, portOff, false},
	} {
		port, dryRun := statusPort(c.program, pod(c.args...))
		assert.Equal(t, c.port, port, "%s %q", c.program, c.args)
		assert.Equal(t, c.dryRun, dryRun, "%s %q", c.program, c.args)
	}
}

// TestEachCommandHasItsOwnHelp: --help after a command's name prints that
// command's lines and the flags it reads, whatever flags come between,
// on stdout with status 0; --help alone prints every command. -h and
// --help=true are --help.
func TestEachCommandHasItsOwnHelp(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"explain", "pod", "--help"}, []string{"kubectl podsweeper explain pod --uid UID", "--uid string"}, []string{"explain ip ADDRESS", "--as string"}},
		{[]string{"explain", "--node", "n1", "ip", "-h"}, []string{"kubectl podsweeper explain ip ADDRESS --node NODE", "--node string"}, []string{"--uid string", "explain pod NAMESPACE"}},
		{[]string{"-o", "json", "status", "--help"}, []string{"kubectl podsweeper status --node NODE", "--timeout duration"}, []string{"--uid string", "report [-o json]"}},
		{[]string{"report", "-h"}, []string{"kubectl podsweeper report [-o json]", "--namespace string"}, []string{"--node string", "--uid string"}},
		{[]string{"--help"}, []string{"explain pod NAMESPACE/NAME", "explain ip ADDRESS", "status --node NODE", "report [-o json]", "--as string"}, nil},
		{[]string{"explain", "--help"}, []string{"explain pod NAMESPACE/NAME", "explain ip ADDRESS"}, nil},
		// --help=true is --help, as the flag parser reads it.
		{[]string{"--help=true"}, []string{"explain pod NAMESPACE/NAME", "report [-o json]"}, nil},
		{[]string{"explain", "pod", "--help=true"}, []string{"kubectl podsweeper explain pod --uid UID"}, []string{"explain ip ADDRESS"}},
	} {
		var out, errs bytes.Buffer
		assert.Equal(t, 0, run(context.Background(), c.args, &out, &errs), "%q", c.args)
		assert.Empty(t, errs.String(), "%q", c.args)
		for _, w := range c.want {
			assert.Contains(t, out.String(), w, "%q", c.args)
		}
		for _, n := range c.not {
			assert.NotContains(t, out.String(), n, "%q", c.args)
		}
	}
}
