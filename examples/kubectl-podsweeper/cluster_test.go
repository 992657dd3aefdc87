package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testdeploy"
	"github.com/podsweeper/podsweeper/ports"
)

// kubectl podsweeper as an operator runs it, against the programs as they
// are deployed: on a real API server and a real containerd node
// (internal/testdeploy), the node agent's chart in a dry run, the
// cluster controller's chart (one replica, destroys on) and cni-gc's (in
// the node's network), each from its image, with the charts' explain RBAC bound to the user "operator"
// (explain.subjects). The plugin runs as that user, from a kubeconfig of
// that user only, and reaches each program's status listener through the
// API server's pods/portforward to its pod (the kubelet's and
// containerd's port-forward into the pod's network namespace).
//
// Its answers, read as JSON (what the text is rendered from) and as text:
//   - a live pod: the PU of each program, its last check's row;
//   - a pod deleted under the agent's dry run: what the agent would have
//     destroyed (PodGone), the controller's destroy and its Event;
//   - a pod recreated under its name: the new pod's PU, and the earlier
//     pod's, which the agent would destroy, and the controller's Event;
//   - a PU waiting for a retry: the controller's failed destroy (its PU's
//     file made a directory that os.Remove cannot remove), its attempts,
//     next attempt and error;
//   - an unknown pod: said plainly;
//   - a pod asked by its UID alone, and a pod whose destroy's Event, as a
//     node's program records it, regards the node;
//   - explain ip, of cni-gc on the node: the live pod's address, its
//     attachment and reservation; a leaked host-local reservation cni-gc
//     frees (row 18, NoSandbox); an address no one holds;
//
// and a user without the chart's roles, or with the ClusterRole but not
// the Role, gets one line that says "forbidden" and which permission, and
// status 1.
func TestExplainOnContainerd(t *testing.T) {
	// A range of 13 addresses: the leaked reservation of explain ip is one of them, as a leak is.
	e := testdeploy.Start(t, "node-explain", testcontainerd.Options{Subnet: explainSubnet})
	ctx := context.Background()
	operator := []any{map[string]any{"kind": "User", "name": "operator", "apiGroup": rbacv1.GroupName}}

	// The node agent, in a dry run.
	agentImg := e.ImportImage(t, "node-agent")
	e.Node.ImportImage(t, testcontainerd.ShellImageArchive(t), "")
	values := e.Values(t, agentImg)
	values["stateDirInitImage"] = testcontainerd.ShellImage
	values["dryRun"] = true
	values["explain"] = map[string]any{"subjects": operator}
	const agentNS = "podsweeper"
	objs := testdeploy.Render(t, "../node-agent/chart", "podsweeper-node-agent", agentNS, values)
	e.Apply(t, agentNS, objs)
	agent := e.WaitReady(t, e.RunDaemonSet(t, agentNS, testdeploy.Named(t, objs, "DaemonSet")))

	// The cluster controller, one replica, destroying.
	ccImg := e.ImportImage(t, "cluster-controller")
	values = e.Values(t, ccImg)
	values["replicaCount"] = 1
	values["explain"] = map[string]any{"subjects": operator}
	values["log"] = map[string]any{"level": "debug"}
	const ccNS = "podsweeper-cluster"
	objs = testdeploy.Render(t, "../cluster-controller/chart", "podsweeper-cluster-controller", ccNS, values)
	e.Apply(t, ccNS, objs)
	pus := filepath.Join(e.Node.Dir, "pus")
	require.NoError(t, os.Mkdir(pus, 0o755))
	require.NoError(t, os.Chown(pus, 65532, 65532))
	e.BindClaim(t, ccNS, testdeploy.Named(t, objs, "PersistentVolumeClaim"), pus)
	replicas := e.RunDeployment(t, ccNS, testdeploy.Named(t, objs, "Deployment"))
	require.Len(t, replicas, 1)
	controller := e.WaitReady(t, replicas[0])
	// cni-gc, in the node's network: its status listener is the node's loopback.
	gcImg := e.ImportImage(t, "cni-gc")
	values = e.Values(t, gcImg)
	values["cni"] = map[string]any{"cacheDir": "/var/lib/cni", "binDirs": e.Node.CNIPluginDirs, "confDir": e.Node.CNIConfDir, "netnsDir": "/run/netns"}
	values["resyncInterval"] = "2s" // host-local's reservations swept every 2 s
	values["explain"] = map[string]any{"subjects": operator}
	const gcNS = "podsweeper-cni-gc"
	objs = testdeploy.Render(t, "../cni-gc/chart", "podsweeper-cni-gc", gcNS, values)
	e.Apply(t, gcNS, objs)
	gc := e.WaitReady(t, e.RunDaemonSet(t, gcNS, testdeploy.Named(t, objs, "DaemonSet")))
	require.True(t, gc.Spec.HostNetwork)
	t.Logf("the agent %s, the controller %s and cni-gc %s are Ready", agent.Name, controller.Name, gc.Name)
	e.LogsOnFailure(t, agent, controller, gc)

	kubeconfig := func(name string) string {
		f := filepath.Join(t.TempDir(), name+".kubeconfig")
		require.NoError(t, os.WriteFile(f, e.Cluster.UserKubeConfig(t, name), 0o600))
		return f
	}
	asOperator := kubeconfig("operator")
	plugin := func(kc string, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var out, errs bytes.Buffer
		start := time.Now()
		code = run(ctx, append([]string{"--kubeconfig=" + kc}, args...), &out, &errs)
		t.Logf("kubectl podsweeper %s: status %d in %v", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
		return code, out.String(), errs.String()
	}
	explain := func(pod string) (*PodExplanation, string) {
		t.Helper()
		code, out, errs := plugin(asOperator, "explain", "pod", pod, "-o", "json")
		require.Equal(t, 0, code, "explain pod %s: %s", pod, errs)
		x := &PodExplanation{}
		require.NoError(t, json.Unmarshal([]byte(out), x), out)
		var text bytes.Buffer
		require.NoError(t, RenderPod(&text, x))
		return x, text.String()
	}
	answerOf := func(x *PodExplanation, program string) Answer {
		t.Helper()
		for _, a := range x.Answers {
			if a.Program.Program == program {
				require.Empty(t, a.Error, "%s answered", program)
				return a
			}
		}
		t.Fatalf("no answer of %s in %+v", program, x.Answers)
		return Answer{}
	}
	puOf := func(a Answer, uid string) *k8s.PUStatus {
		for i, s := range a.PUs {
			if s.PUID == uid {
				return &a.PUs[i]
			}
		}
		return nil
	}
	reportOf := func(a Answer, uid string) *k8s.WouldDestroy {
		for i, r := range a.Reports {
			if r.PUID == uid {
				return &a.Reports[i]
			}
		}
		return nil
	}
	destroyed := func(x *PodExplanation, uid string) bool {
		return slices.ContainsFunc(x.Events, func(ev Event) bool {
			return ev.Reason == k8s.EventReasonDestroyed && strings.Contains(ev.Note, "destroyed PU "+uid)
		})
	}
	// eventually asks until ok says the answer is the one expected, and
	// fails with the last one.
	eventually := func(pod, what string, ok func(x *PodExplanation, text string) bool) (*PodExplanation, string) {
		t.Helper()
		var x *PodExplanation
		var text string
		deadline := time.Now().Add(90 * time.Second)
		for {
			x, text = explain(pod)
			if ok(x, text) {
				return x, text
			}
			if time.Now().After(deadline) {
				t.Fatalf("explain pod %s: %s; the last answer:\n%s", pod, what, text)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	e.Cluster.CreateNamespace(t, "apps")

	// A live pod: each program's PU, checked.
	web := e.Node.RunPod(t, e.Node.NewPod("apps", "web"))
	sandbox, err := e.Node.ReadySandbox(ctx, string(web.UID))
	require.NoError(t, err)
	x, text := eventually("apps/web", "the three programs hold its PU, checked: the agent's with its sandbox", func(x *PodExplanation, _ string) bool {
		a, c := puOf(answerOf(x, "node-agent"), string(web.UID)), puOf(answerOf(x, "cluster-controller"), string(web.UID))
		g := puOf(answerOf(x, "cni-gc"), string(web.UID))
		return a != nil && c != nil && g != nil && a.LastChecked != nil && a.LastRow == 9 && c.LastChecked != nil
	})
	assert.Equal(t, gc.Name, answerOf(x, "cni-gc").Program.Pod, "cni-gc's pod on the pod's node, through a port-forward into the node's network")
	require.NotNil(t, x.Pod)
	assert.Equal(t, string(web.UID), x.Pod.UID)
	assert.Equal(t, e.Node.Name, x.Pod.Node)
	a := answerOf(x, "node-agent")
	assert.Equal(t, agent.Name, a.Program.Pod)
	assert.True(t, a.Program.DryRun, "the agent runs a dry run")
	assert.Equal(t, sandbox, puOf(a, string(web.UID)).SandboxID)
	assert.Empty(t, puOf(a, string(web.UID)).WouldDestroy)
	assert.Equal(t, 5, puOf(answerOf(x, "cluster-controller"), string(web.UID)).LastRow, "the controller checks no sandbox")
	assert.Empty(t, x.Events)
	assert.Contains(t, text, "Pod apps/web (UID "+string(web.UID)+") on node "+e.Node.Name+": Running.")
	assert.Contains(t, text, "row 9 of the decision table, same pod, same sandbox.")
	assert.Contains(t, text, "dry run       would keep it.")
	assert.Contains(t, text, "No podsweeper Event names this pod (")
	t.Logf("a live pod:\n%s", text)

	explainLiveLeakedAndUnknownAddresses(t, e, plugin, asOperator, web, sandbox)

	// A pod deleted under the agent's dry run.
	gone := e.Node.RunPod(t, e.Node.NewPod("apps", "gone"))
	eventually("apps/gone", "the agent tracks its PU", func(x *PodExplanation, _ string) bool {
		return puOf(answerOf(x, "node-agent"), string(gone.UID)) != nil
	})
	require.NoError(t, e.Cluster.Client.Delete(ctx, gone))
	waitGone(t, e, gone)
	// The controller's PU leaves its page when it is destroyed. A controller that restarts meanwhile may list the
	// pod again from its API server's watch cache, which can lag: it tracks its PU again, and destroys it a second
	// time once the cache catches up (DestroyPU is idempotent); its page holds it until then.
	x, text = eventually("apps/gone", "the agent would have destroyed its PU; the controller destroyed its own", func(x *PodExplanation, _ string) bool {
		r := reportOf(answerOf(x, "node-agent"), string(gone.UID))
		return r != nil && r.Reason == string(ports.ReasonPodGone) && destroyed(x, string(gone.UID)) &&
			puOf(answerOf(x, "cluster-controller"), string(gone.UID)) == nil
	})
	assert.Nil(t, x.Pod, "the pod is gone")
	assert.Nil(t, puOf(answerOf(x, "cluster-controller"), string(gone.UID)), "the controller destroyed its PU")
	assert.Contains(t, text, "Pod apps/gone: no such pod in the API server")
	assert.Contains(t, text, "would have destroyed it, PodGone: row 1 of the decision table, pod not found")
	assert.Contains(t, text, "PUDestroyed, regarding Pod/apps/gone: PodGone: destroyed PU "+string(gone.UID))
	t.Logf("a pod deleted under a dry run:\n%s", text)

	// A pod recreated under its name.
	first := e.Node.RunPod(t, e.Node.NewPod("apps", "again"))
	eventually("apps/again", "the agent tracks its PU", func(x *PodExplanation, _ string) bool {
		return puOf(answerOf(x, "node-agent"), string(first.UID)) != nil
	})
	require.NoError(t, e.Cluster.Client.Delete(ctx, first))
	waitGone(t, e, first)
	second := e.Node.RunPod(t, e.Node.NewPod("apps", "again"))
	require.NotEqual(t, first.UID, second.UID)
	x, text = eventually("apps/again", "the new pod's PU held; the earlier one's would be destroyed", func(x *PodExplanation, _ string) bool {
		a := answerOf(x, "node-agent")
		old := puOf(a, string(first.UID))
		return puOf(a, string(second.UID)) != nil && reportOf(a, string(first.UID)) != nil &&
			(old == nil || old.WouldDestroy != "") && destroyed(x, string(first.UID))
	})
	require.NotNil(t, x.Pod)
	assert.Equal(t, string(second.UID), x.Pod.UID, "the pod of that name now")
	r := reportOf(answerOf(x, "node-agent"), string(first.UID))
	assert.Contains(t, []string{string(ports.ReasonPodGone), string(ports.ReasonUIDChanged)}, r.Reason,
		"the earlier pod's PU goes: its pod gone, or another UID under its name, as the check found it")
	assert.NotNil(t, puOf(answerOf(x, "cluster-controller"), string(second.UID)), "the controller holds the new pod's PU")
	assert.Contains(t, text, "Pod apps/again (UID "+string(second.UID)+")")
	assert.Contains(t, text, "PU "+string(first.UID)+" of pod apps/again")
	assert.Contains(t, text, "destroyed PU "+string(first.UID))
	t.Logf("a pod recreated under its name:\n%s", text)

	// A PU waiting for a retry: the controller's destroy fails while its
	// PU's file is a directory with a file in it.
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testcontainerd.PauseImage}},
			AutomountServiceAccountToken: ptr.To(false)}}
	require.NoError(t, e.Cluster.Client.Create(ctx, db))
	file := filepath.Join(pus, string(db.UID))
	require.Eventually(t, func() bool { _, err := os.Stat(file); return err == nil }, 60*time.Second, 50*time.Millisecond,
		"the controller registers the PU of apps/db")
	require.NoError(t, os.Remove(file))
	require.NoError(t, os.MkdirAll(filepath.Join(file, "held"), 0o755))
	require.NoError(t, e.Cluster.Client.Delete(ctx, db))
	x, text = eventually("apps/db", "the controller's PU waits for a retry", func(x *PodExplanation, _ string) bool {
		s := puOf(answerOf(x, "cluster-controller"), string(db.UID))
		return s != nil && s.State == "waiting for a retry" && s.Attempts >= 1 && s.NextAttempt != nil
	})
	s := puOf(answerOf(x, "cluster-controller"), string(db.UID))
	assert.Contains(t, s.LastError, "directory not empty")
	assert.Equal(t, 1, s.LastRow, "pod not found")
	assert.Contains(t, text, "its destroy failed: waiting for a retry.")
	assert.Regexp(t, `attempts      \d+ destroy call\(s\) failed; next (in \d|due now)`, text)
	assert.Contains(t, text, "directory not empty")
	t.Logf("a PU waiting for a retry:\n%s", text)
	require.NoError(t, os.RemoveAll(file)) // the next retry destroys it

	// An unknown pod.
	x, text = explain("apps/nope")
	assert.Nil(t, x.Pod)
	assert.Empty(t, x.Events)
	for _, a := range x.Answers {
		assert.Empty(t, a.Error, "%s answered", a.Program)
		assert.Empty(t, a.PUs, "%s holds nothing of it", a.Program)
		assert.Empty(t, a.Reports, "%s reports nothing of it", a.Program)
	}
	assert.Len(t, x.Answers, 3, "every program was asked")
	assert.Contains(t, text, "Pod apps/nope: no such pod in the API server")
	assert.Contains(t, text, "podsweeper knows nothing of this pod")
	t.Logf("an unknown pod:\n%s", text)

	// By UID alone: the pod is found from its PU.
	code, out, errs := plugin(asOperator, "explain", "pod", "--uid", string(second.UID), "-o", "json")
	require.Equal(t, 0, code, errs)
	x = &PodExplanation{}
	require.NoError(t, json.Unmarshal([]byte(out), x), out)
	assert.Equal(t, "apps/again", x.Namespace+"/"+x.Name, "named from its PU")
	require.NotNil(t, x.Pod, "the pod of that UID")
	assert.Equal(t, string(second.UID), x.Pod.UID)
	code, out, errs = plugin(asOperator, "explain", "pod", "--uid", string(first.UID))
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "Pod with UID "+string(first.UID)+" (apps/again): no pod of that name has that UID in the API server")
	assert.Contains(t, out, "the pod named apps/again now has UID "+string(second.UID))
	assert.Contains(t, out, "destroyed PU "+string(first.UID), "the earlier pod's destroy, by its UID")
	assert.NotNil(t, puOf(answerOf(x, "node-agent"), string(second.UID)))

	// A node's program's Event of a destroy regards the node and names the
	// pod (k8s.Events): written here as the agent's recorder writes it
	// (the agent runs a dry run, which records none), it is found for the pod.
	const goneUID = "0d8c3a1e-5b7f-4e2a-9c6d-1f0e2b3a4c5d"
	require.NoError(t, e.Cluster.Client.Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "node-explain.destroy"},
		EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "podsweeper", ReportingInstance: "podsweeper-node-explain",
		Action: k8s.EventActionDestroy, Reason: k8s.EventReasonDestroyed, Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: e.Node.Name, UID: types.UID(e.Node.Name)},
		Related:   &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "apps", Name: "cache", UID: goneUID},
		Note:      "PodGone: destroyed PU " + goneUID + " of pod apps/cache (sandbox 7be1c2d3e4f5)",
	}))
	x, text = explain("apps/cache")
	require.Len(t, x.Events, 1, text)
	assert.Equal(t, "Node/"+e.Node.Name, x.Events[0].Regarding)
	assert.Contains(t, text, "PUDestroyed, regarding Node/"+e.Node.Name+": PodGone: destroyed PU "+goneUID)
	assert.NotContains(t, text, "podsweeper knows nothing of this pod")

	// status and report, as text.
	code, out, errs = plugin(asOperator, "status", "--node", e.Node.Name)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, string(second.UID))
	assert.Contains(t, out, "cni-gc "+gcNS+"/"+gc.Name)
	assert.NotContains(t, out, "could not be asked")
	t.Logf("status --node %s:\n%s", e.Node.Name, out)
	code, out, errs = plugin(asOperator, "report")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "apps/gone")
	assert.Contains(t, out, "runs without --dry-run")
	t.Logf("report:\n%s", out)

	// Without the roles: forbidden, in one line.
	code, out, errs = plugin(kubeconfig("nobody"), "explain", "pod", "apps/web")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
	assert.Contains(t, errs, "forbidden: you may not get pods in namespace apps")
	assert.NotContains(t, errs, "goroutine")
	// With the ClusterRole, not the Role: the port-forward is refused.
	require.NoError(t, e.Cluster.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader-explains"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "podsweeper-node-agent-explain"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "reader"}},
	}))
	asReader := kubeconfig("reader")
	require.Eventually(t, func() bool {
		code, out, errs = plugin(asReader, "explain", "pod", "apps/web")
		return strings.Contains(errs, "pods/portforward")
	}, 30*time.Second, 200*time.Millisecond, "the RBAC binding is in force: %s", errs)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
	assert.Contains(t, errs, "forbidden: you may not create pods/portforward in namespace ")
	t.Logf("without the Role: %s", errs)
}

// explainSubnet is host-local's range on the node of TestExplainOnContainerd.
const explainSubnet = "10.88.0.0/28"

// explainLiveLeakedAndUnknownAddresses runs explain ip against cni-gc as
// deployed on e's node: the address of the live pod web (its sandbox
// sandbox) is held by its attachment, and by host-local's reservation of
// it, which cni-gc keeps; a reservation of no sandbox, written as a chained
// plugin's failed ADD leaves it and older than --reservation-grace, is
// freed by cni-gc's sweep, which says so with its row and reason; an
// address no one holds is said so. plugin runs the plugin with the
// kubeconfig kc.
func explainLiveLeakedAndUnknownAddresses(t *testing.T, e *testdeploy.Env, plugin func(kc string, args ...string) (int, string, string),
	kc string, web *corev1.Pod, sandbox string) {
	t.Helper()
	explainIP := func(ip string) (*IPExplanation, string) {
		t.Helper()
		code, out, errs := plugin(kc, "explain", "ip", ip, "--node", e.Node.Name, "-o", "json")
		require.Equal(t, 0, code, "explain ip %s: %s", ip, errs)
		x := &IPExplanation{}
		require.NoError(t, json.Unmarshal([]byte(out), x), out)
		require.NotNil(t, x.Program, "cni-gc on the node is asked")
		require.Empty(t, x.Error, "cni-gc answers")
		require.NotNil(t, x.Address)
		var text bytes.Buffer
		require.NoError(t, RenderIP(&text, x))
		return x, text.String()
	}
	eventuallyIP := func(ip, what string, ok func(x *IPExplanation) bool) (*IPExplanation, string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			x, text := explainIP(ip)
			if ok(x) {
				return x, text
			}
			if time.Now().After(deadline) {
				t.Fatalf("explain ip %s: %s; the last answer:\n%s", ip, what, text)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	dataDir := "/var/lib/cni/networks" // host-local's, as cni-gc reads it in the node
	network := testcontainerd.NetworkName

	// The live pod's address: its attachment and its reservation, kept.
	ip := web.Status.PodIP
	require.NotEmpty(t, ip)
	x, text := eventuallyIP(ip, "its attachment, and its reservation as a sweep read it", func(x *IPExplanation) bool {
		return len(x.Address.Attachments) == 1 && len(x.Address.Reservations) == 1 && len(x.PUs) == 1
	})
	assert.Equal(t, "cni-gc", x.Program.Program)
	assert.False(t, x.Program.DryRun)
	a := x.Address.Attachments[0]
	assert.Equal(t, []string{network, sandbox, "eth0", "apps", "web", string(web.UID)},
		[]string{a.Network, a.ContainerID, a.IfName, a.PodNamespace, a.PodName, a.PodUID}, "the attachment of the pod's sandbox, as the cache recorded it")
	assert.False(t, a.DisableGC)
	assert.Nil(t, a.Decision, "cni-gc was never asked to free the live pod's sandbox")
	require.Len(t, x.Pods, 1)
	require.NotNil(t, x.Pods[0].Pod, "the pod, in the API server")
	assert.Equal(t, string(web.UID), x.Pods[0].Pod.UID, "live: the pod of that name is the one of the cache's UID")
	assert.Equal(t, string(web.UID), x.PUs[0].PUID, "cni-gc's PU of the pod")
	r := x.Address.Reservations[0]
	assert.Equal(t, []string{network, dataDir + "/" + network + "/" + ip, sandbox, "eth0"}, []string{r.Network, r.File, r.ContainerID, r.IfName})
	assert.Equal(t, "kept", r.State)
	assert.Equal(t, "keep", r.Decision.Verdict)
	assert.Contains(t, []int{14, 15, 16}, r.Decision.Row, "not asked, listed by the runtime, or held by the cache: %s", r.Decision.Why)
	assert.Empty(t, x.Address.Freed)
	assert.Contains(t, text, "Address "+ip+" on node "+e.Node.Name+".")
	assert.Contains(t, text, "attachment    network "+network+", interface eth0, sandbox "+shortID(sandbox)+", of pod apps/web (UID "+string(web.UID)+")")
	assert.Contains(t, text, "pod         live on node "+e.Node.Name+": Running.")
	assert.Contains(t, text, "freeing     not decided: the engine has not asked cni-gc to free this sandbox since it started.")
	assert.Contains(t, text, "reservation   host-local's "+dataDir+"/"+network+"/"+ip)
	assert.Regexp(t, `freeing     kept, as the sweep \S+ ago decided: row 1[456] of the freeing table`, text)
	t.Logf("explain ip of a live pod's address:\n%s", text)

	// A leaked reservation: host-local's file of a container no sandbox is, and no cache entry names, reserved an
	// hour ago, as a chained plugin's failed ADD leaves it. cni-gc's sweep frees it with a DEL through the
	// network's config, which host-local releases.
	const leakedIP, leakedID = "10.88.0.14", "c0ffee00d2b34c4e9a513f0c8e5b7d2168a1b2c3d4e5f60718293a4b5c6d7e8f"
	require.NotContains(t, e.Node.Addresses(t), leakedIP, "the range's last address is free")
	leaked := filepath.Join(e.Node.CNICacheDir, "networks", network, leakedIP)
	require.NoError(t, os.WriteFile(leaked, []byte(leakedID+"\r\neth0"), 0o644))
	hourAgo := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(leaked, hourAgo, hourAgo))
	x, text = eventuallyIP(leakedIP, "cni-gc freed the leaked reservation", func(x *IPExplanation) bool { return len(x.Address.Freed) > 0 })
	require.Len(t, x.Address.Freed, 1, text)
	f := x.Address.Freed[0]
	assert.True(t, f.Reservation, "a reservation, not an attachment")
	assert.Equal(t, []string{network, dataDir + "/" + network + "/" + leakedIP, leakedID, "eth0"}, []string{f.Network, f.File, f.ContainerID, f.IfName})
	assert.Equal(t, 18, f.Decision.Row)
	assert.Equal(t, cni.ReasonNoSandbox, f.Decision.Reason)
	assert.Equal(t, "free", f.Decision.Verdict)
	assert.Empty(t, x.Address.Attachments, "no attachment holds it")
	for _, r := range x.Address.Reservations { // the round that freed it, until the next reads it gone
		assert.Equal(t, "freed", r.State)
	}
	assert.NoFileExists(t, leaked, "host-local released it")
	assert.Empty(t, x.Pods, "a reservation names a container, not a pod")
	assert.Contains(t, text, "freed         ")
	assert.Contains(t, text, "host-local's "+dataDir+"/"+network+"/"+leakedIP+", network "+network+", of container "+shortID(leakedID)+", interface eth0 (NoSandbox): row 18 of the freeing table")
	t.Logf("explain ip of a leaked reservation:\n%s", text)

	// An address no one holds.
	const unknownIP = "10.88.0.12"
	require.NotContains(t, e.Node.Addresses(t), unknownIP)
	x, text = explainIP(unknownIP)
	assert.Empty(t, x.Address.Attachments)
	assert.Empty(t, x.Address.Reservations)
	assert.Empty(t, x.Address.Freed)
	assert.NotNil(t, x.Address.ReservationsRead, "a sweep ran")
	assert.Contains(t, text, "No attachment of libcni's cache and no host-local reservation holds it")
	assert.Contains(t, text, "cni-gc knows nothing of this address.")
	t.Logf("explain ip of an unknown address:\n%s", text)
}

// waitGone waits for the pod to be gone from the API server (the kubelet
// stopped it and the graceful delete ended).
func waitGone(t *testing.T, e *testdeploy.Env, pod *corev1.Pod) {
	t.Helper()
	require.Eventually(t, func() bool {
		err := e.Cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 50*time.Millisecond, "pod %s/%s deleted", pod.Namespace, pod.Name)
}
