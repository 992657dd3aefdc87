package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/program"
)

// The charts' names (app.kubernetes.io/name of their pods), and the
// program each runs.
var charts = map[string]string{
	"podsweeper-node-agent":         "node-agent",
	"podsweeper-cluster-controller": "cluster-controller",
	"podsweeper-cni-gc":             "cni-gc",
}

// nodeScoped are the programs that run one pod per node, each for its
// node's pods only.
var nodeScoped = map[string]bool{"node-agent": true, "cni-gc": true}

// defaultStatusPorts are the ports of --status-bind-address by default,
// for a program's pod whose command line does not give it.
var defaultStatusPorts = map[string]string{
	"node-agent":         portOf(program.DefaultStatusBindAddress),
	"cluster-controller": portOf(program.DefaultStatusBindAddress),
	"cni-gc":             "9813",
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// forbiddenError is a request the user's RBAC refused: it says which
// permission is missing and which role of the charts grants it.
type forbiddenError struct {
	verb, resource, namespace, role string
	// name is the object's: for impersonate, the user (--as), group
	// (--as-group), UID (--as-uid) or extra's value the user may not be.
	name string
}

func (e *forbiddenError) Error() string {
	if e.verb == "impersonate" && e.resource == "serviceaccounts" {
		return fmt.Sprintf("forbidden: you may not impersonate serviceaccounts %q in namespace %s (--as): the programs' charts grant "+
			"no impersonation; a Role of namespace %s that grants impersonate on serviceaccounts, bound to you, does", e.name, e.namespace, e.namespace)
	}
	if e.verb == "impersonate" {
		return fmt.Sprintf("forbidden: you may not impersonate %s %q (%s): the programs' charts grant no impersonation; "+
			"a ClusterRole that grants impersonate on %s%s, bound to you, does", e.resource, e.name, impersonationFlags[e.resource], e.resource,
			impersonationGroups[e.resource])
	}
	where := "in namespace " + e.namespace
	if e.namespace == "" {
		where = "in every namespace"
	}
	return fmt.Sprintf("forbidden: you may not %s %s %s: %s grants it (docs/operating/explain.md says how to bind it)",
		e.verb, e.resource, where, e.role)
}

// impersonationFlags are kubectl's flags that ask to impersonate each
// resource of impersonation.
var impersonationFlags = map[string]string{
	"users": "--as", "groups": "--as-group", "uids": "--as-uid", "userextras": "the kubeconfig's as-user-extra",
}

// impersonationGroups names the API group of a resource of impersonation outside the core group.
var impersonationGroups = map[string]string{"uids": " in API group authentication.k8s.io", "userextras": " in API group authentication.k8s.io"}

// clusterRole names the ClusterRole of the charts that grants reading
// pods and Events.
const clusterRole = "the ClusterRole <fullname>-explain of the programs' chart"

// refused turns an API error into a forbiddenError when the user's own
// authorization refused the request: verb on resource in namespace (""
// every namespace), which role grants. Any other error is returned as it is.
func (c *cluster) refused(ctx context.Context, err error, verb, resource, namespace, role string) error {
	var st apierrors.APIStatus
	if !apierrors.IsForbidden(err) || !errors.As(err, &st) {
		return err
	}
	s := st.Status()
	if f := c.forbidden(ctx, &s, verb, resource, namespace, "", role); f != nil {
		return f
	}
	return err
}

// portForward opens a port-forward to the pod namespace/name's port as
// the user. An upgrade answered 403 is a forbiddenError only when the
// user's own authorization refused it (cluster.forbidden); any other
// failure, the kubelet's refusal among them, is an error that says the
// program could not be asked.
func (c *cluster) portForward(ctx context.Context, namespace, name string, port int) (*forwarded, error) {
	f, err := forward(ctx, c.config, c.cs, namespace, name, port)
	if f != nil {
		f.maxPage = cmp.Or(c.maxPage, maxPage)
	}
	var r *refusedForward
	if errors.As(err, &r) {
		if fe := c.forbidden(ctx, r.status, r.verb, "pods/portforward", namespace, name,
			"the Role <fullname>-explain of the programs' chart, in namespace "+namespace); fe != nil {
			return nil, fe
		}
		return nil, r.err
	}
	return f, err
}

// forbidden says whether a request answered 403 (its answer's status st,
// nil when it was none) to verb on resource in namespace (the object
// name, when not "") was refused by the user's own authorization, and
// which permission is missing: the one place that decides it. With
// impersonation (--as, --as-group, --as-uid), the user may not be who
// they ask to be: a SelfSubjectAccessReview of the user without
// impersonation says so. Then a SelfSubjectAccessReview of verb on
// resource in namespace, as the user: denied, the permission is missing;
// allowed, the refusal came from elsewhere (the kubelet's authorization
// of the API server, a webhook of its own) and forbidden returns nil. When
// the review cannot be made, the 403's status decides: the API server's
// authorizer names the resource (or the impersonation) it refused.
func (c *cluster) forbidden(ctx context.Context, st *metav1.Status, verb, resource, namespace, name, role string) *forbiddenError {
	imp := c.config.Impersonate
	var asked []authorizationv1.ResourceAttributes
	// As the API server's impersonation filter asks them: a service account's user as its serviceaccounts object, a
	// UID and a user extra in the group authentication.k8s.io.
	if ns, sa, ok := serviceAccountOf(imp.UserName); ok {
		asked = append(asked, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: sa})
	} else if imp.UserName != "" {
		asked = append(asked, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: imp.UserName})
	}
	for _, g := range imp.Groups {
		asked = append(asked, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: g})
	}
	if imp.UID != "" {
		asked = append(asked, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: imp.UID})
	}
	for _, k := range slices.Sorted(maps.Keys(imp.Extra)) {
		for _, v := range imp.Extra[k] {
			asked = append(asked, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "userextras",
				Subresource: k, Name: v})
		}
	}
	if len(asked) > 0 {
		self, err := c.self()
		for _, a := range asked {
			allowed, reviewed := false, false
			if err == nil {
				allowed, reviewed = review(ctx, self, a)
			}
			if (reviewed && !allowed) || (!reviewed && statusNames(st, a.Resource, a.Name)) {
				return &forbiddenError{verb: "impersonate", resource: a.Resource, name: a.Name, namespace: a.Namespace}
			}
		}
	}
	a := authorizationv1.ResourceAttributes{Verb: verb, Namespace: namespace, Name: name}
	a.Resource, a.Subresource, _ = strings.Cut(resource, "/")
	allowed, reviewed := review(ctx, c.cs, a)
	if (reviewed && !allowed) || (!reviewed && statusNames(st, a.Resource, "")) {
		return &forbiddenError{verb: verb, resource: resource, namespace: namespace, role: role}
	}
	return nil
}

// serviceAccountOf splits a service account's user name, system:serviceaccount:NAMESPACE:NAME.
func serviceAccountOf(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != "" && !strings.Contains(name, ":")
}

// review asks the API server whether the user of cs may do a: allowed, and
// whether it answered.
func review(ctx context.Context, cs kubernetes.Interface, a authorizationv1.ResourceAttributes) (allowed, reviewed bool) {
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
	if err != nil {
		return false, false
	}
	return r.Status.Allowed, true
}

// statusNames reports whether st is the API server's authorizer refusing
// a request on resource (and the object name, when not ""): a status
// Forbidden whose details name them.
func statusNames(st *metav1.Status, resource, name string) bool {
	return st != nil && st.Reason == metav1.StatusReasonForbidden && st.Details != nil &&
		st.Details.Kind == resource && (name == "" || st.Details.Name == name)
}

// self is a client of the user as themselves, without impersonation.
func (c *cluster) self() (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.Impersonate = rest.ImpersonationConfig{}
	return kubernetes.NewForConfig(cfg)
}

// cluster asks the API server and the programs, as the user.
type cluster struct {
	config *rest.Config
	cs     kubernetes.Interface
	// namespace is the programs' (--namespace); "": every namespace.
	namespace string
	// timeout bounds the questions to each program.
	timeout time.Duration
	// maxPage is the most of a page read (0: maxPage).
	maxPage int
}

// target is a program's pod and the port of its status listener ("":
// turned off).
type target struct {
	Program
	port    string
	hostNet bool // its pod runs in its node's network
}

// shareListeners asks once the targets whose pods run in one node's network (hostNetwork) with one status port: the
// port-forward to each reaches the node's port, whose one listener one process holds (a rollout's old pod in its grace
// period, its replacement restarting until the port is free). The first asked stands for them all and names the
// others (Program.SharedWith): which of them answered cannot be told; it is in a dry run as all are, and has restarted
// as any has.
func shareListeners(ts []target) []target {
	type listener struct {
		node string
		port int
	}
	first := map[listener]int{}
	out := ts[:0]
	for _, t := range ts {
		n, why := statusPortNumber(t.port)
		l := listener{t.Node, n}
		if !t.hostNet || why != "" || t.Node == "" {
			out = append(out, t)
			continue
		}
		if i, ok := first[l]; ok {
			// Either process may answer: a dry run is one only if all are in one (a 404 of the report page is no
			// error otherwise), and a restart of any may have taken its reports.
			out[i].SharedWith = append(out[i].SharedWith, t.Program.Program+" "+t.Namespace+"/"+t.Pod)
			out[i].DryRun = out[i].DryRun && t.DryRun
			out[i].Restarts += t.Restarts
			continue
		}
		first[l] = len(out)
		out = append(out, t)
	}
	return out
}

// programs returns the pods of the programs that run, Running and not
// being deleted: on node only when node is not "" (every node-scoped
// program's pod on that node, and the cluster-wide programs' pods); and,
// for node, why a node-scoped program there may hold what is not asked: a
// pod of one there that does not run (Pending, being deleted), or none
// there while they run on other nodes.
func (c *cluster) programs(ctx context.Context, node string, clusterWide bool) ([]target, []string, error) {
	var names []string
	for n := range charts {
		names = append(names, n)
	}
	slices.Sort(names)
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name in (" + strings.Join(names, ",") + ")"}
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, opts)
	if err != nil {
		role := clusterRole
		if c.namespace != "" {
			role = "the Role <fullname>-explain of the programs' chart"
		}
		err := c.refused(ctx, err, "list", "pods", c.namespace, role)
		var f *forbiddenError
		if errors.As(err, &f) && f.verb == "list" && c.namespace == "" {
			return nil, nil, fmt.Errorf("%w; or name the programs' namespace with --namespace", err)
		}
		return nil, nil, err
	}
	var out []target
	var unasked []string
	if c.namespace != "" {
		// Only that namespace's programs are listed: one of another namespace is neither asked nor known.
		unasked = append(unasked, fmt.Sprintf("the programs of other namespaces than %s, if any (--namespace %s): not listed", c.namespace, c.namespace))
	}
	// A node's program is a release's: each release (a namespace's) runs its own on each node.
	type release struct{ prog, namespace, name string }
	releaseOf := func(p corev1.Pod) release {
		return release{charts[p.Labels["app.kubernetes.io/name"]], p.Namespace, p.Labels["app.kubernetes.io/instance"]}
	}
	elsewhere := map[release]bool{} // node-scoped programs' releases that run on other nodes than node
	named := map[release]bool{}     // those of which a pod on node (or on no node yet) is named not asked
	var down []corev1.Pod           // programs' pods that have ended (Failed, Succeeded): asked of nothing
	for _, p := range list.Items {
		prog := charts[p.Labels["app.kubernetes.io/name"]]
		if prog == "" || !nodeScoped[prog] && !clusterWide {
			continue
		}
		ours := !nodeScoped[prog] || node == "" || p.Spec.NodeName == node || p.Spec.NodeName == ""
		switch p.Status.Phase {
		case corev1.PodPending, corev1.PodUnknown:
			// One that does not run yet (a DaemonSet's pod not yet scheduled names no node) may be the program asked
			// for: of node, of every node when none is known, or the cluster's.
			if ours {
				unasked = append(unasked, fmt.Sprintf("%s %s/%s%s is %s: not asked", prog, p.Namespace, p.Name, onNodeOf(p.Spec.NodeName), p.Status.Phase))
				named[releaseOf(p)] = true
			}
			continue
		case corev1.PodRunning: // a pod being deleted still runs its grace period, and is asked
		default:
			if ours {
				down = append(down, p)
			}
			continue
		}
		if nodeScoped[prog] && node != "" && p.Spec.NodeName != node {
			elsewhere[releaseOf(p)] = true
			continue
		}
		t := target{Program: Program{Program: prog, Release: p.Labels["app.kubernetes.io/instance"], Namespace: p.Namespace,
			Pod: p.Name, Node: p.Spec.NodeName}}
		if !nodeScoped[prog] {
			t.Node = ""
		}
		t.port, t.DryRun = statusPort(prog, p)
		t.hostNet = p.Spec.HostNetwork
		for _, cs := range p.Status.ContainerStatuses {
			t.Restarts += cs.RestartCount
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b target) int {
		return strings.Compare(a.Program.Program+"\x00"+a.Node+"\x00"+a.Namespace+"/"+a.Pod, b.Program.Program+"\x00"+b.Node+"\x00"+b.Namespace+"/"+b.Pod)
	})
	// A pod that has ended is named when nothing runs in its place: no pod of its program on its node (or, for the
	// cluster's program, anywhere) is asked. A leftover beside its replacement is not.
	for _, p := range down {
		prog := charts[p.Labels["app.kubernetes.io/name"]]
		replaced := slices.ContainsFunc(out, func(t target) bool {
			return t.Program.Program == prog && t.Program.Release == p.Labels["app.kubernetes.io/instance"] &&
				t.Namespace == p.Namespace && (!nodeScoped[prog] || t.Node == p.Spec.NodeName) // a release is one namespace's
		})
		if !replaced {
			unasked = append(unasked, fmt.Sprintf("%s %s/%s%s is %s: not asked", prog, p.Namespace, p.Name, onNodeOf(p.Spec.NodeName), p.Status.Phase))
		}
		named[releaseOf(p)] = true
	}
	// A release whose program runs on other nodes and has none on node, asked or named, is named: another
	// release's program on node is not it.
	releases := map[string]int{} // the releases of each program that run elsewhere
	for r := range elsewhere {
		releases[r.prog]++
	}
	var missing []string
	for r := range elsewhere {
		if named[r] || slices.ContainsFunc(out, func(t target) bool {
			return t.Node == node && t.Program.Program == r.prog && t.Namespace == r.namespace && t.Program.Release == r.name
		}) {
			continue
		}
		of := ""
		another := slices.ContainsFunc(out, func(t target) bool { return t.Program.Program == r.prog }) || // asked there
			slices.ContainsFunc(slices.Collect(maps.Keys(named)), func(n release) bool { return n.prog == r.prog && n != r }) // or named
		if releases[r.prog] > 1 || another {
			of = fmt.Sprintf(" of release %s/%s", r.namespace, r.name) // which of the program's releases
		}
		missing = append(missing, fmt.Sprintf("no %s%s runs on node %s (it runs on other nodes): what one there would hold is not told", r.prog, of, node))
	}
	slices.Sort(missing)
	return shareListeners(out), append(unasked, missing...), nil
}

// onNodeOf says on which node a program's pod is, if any.
func onNodeOf(node string) string {
	if node == "" {
		return " (on no node yet)"
	}
	return " on node " + node
}

// failed is the answer of the program t when it could not be asked: why,
// and no PU or report (those read before the failure are not kept).
func failed(t target, format string, args ...any) Answer {
	return Answer{Program: t.Program, Error: fmt.Sprintf(format, args...)}
}

// ask asks the program t for its status page and its dry run's report,
// keeping the PUs and reports keep takes (nil: all).
func (c *cluster) ask(ctx context.Context, t target, keep func(pod, puID string) bool) (Answer, error) {
	a := Answer{Program: t.Program}
	port, why := statusPortNumber(t.port)
	if why != "" {
		return failed(t, "%s", why), nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	f, err := c.portForward(ctx, t.Namespace, t.Pod, port)
	var forbidden *forbiddenError
	if errors.As(err, &forbidden) {
		return a, err
	}
	if err != nil {
		return failed(t, "%s", err), nil
	}
	defer f.close()
	began := time.Now() // the pages' monotonic clocks move by no more than this one between them, if they are one process's
	code, body, at, h, err := f.get(ctx, k8s.StatusPath)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("%s answered %d: %s", k8s.StatusPath, code, strings.TrimSpace(string(body)))
	}
	if err == nil {
		a.PUs, err = decodePUs(body)
	}
	if err != nil {
		return failed(t, "reading its status on port %d: %v", port, err), nil
	}
	a.At = at // its page's times are told relative to when it answered, not to when the command began
	a.Standby, a.Ended = h.Get(k8s.EngineHeader) == k8s.EngineNotRunning, h.Get(k8s.EngineHeader) == k8s.EngineEnded
	statusAt, statusHeader := at, h
	code, body, at, h, err = f.get(ctx, k8s.DryRunPath)
	switch {
	case err != nil:
		return failed(t, "reading its dry run's report on port %d: %v", port, err), nil
	case code == http.StatusNotFound && t.DryRun:
		return failed(t, "its command line says --dry-run, and %s answered 404: its dry run's report cannot be read", k8s.DryRunPath), nil
	case code == http.StatusNotFound:
		a.Program.DryRun = false
	case code == http.StatusOK:
		total, reports, err := decodeReport(body)
		if err != nil {
			return failed(t, "reading its dry run's report on port %d: %s: %v", port, k8s.DryRunPath, err), nil
		}
		// A step of the program's wall clock between its two pages is taken out of the report's times, so that they
		// compare with the status page's.
		step := wallStep(statusAt, statusHeader, at, h, time.Since(began))
		for i := range reports {
			reports[i].At = reports[i].At.Add(-step)
		}
		a.Program.DryRun, a.Reports, a.ReportsTotal, a.ReportsKept, a.ReportsAt = true, reports, total, len(reports), at.Add(-step)
	default:
		return failed(t, "reading its dry run's report on port %d: %s answered %d: %s", port, k8s.DryRunPath, code, strings.TrimSpace(string(body))), nil
	}
	if keep != nil {
		a.PUs = slices.DeleteFunc(a.PUs, func(s k8s.PUStatus) bool { return !keep(s.Pod, s.PUID) })
		a.Reports = slices.DeleteFunc(a.Reports, func(r k8s.WouldDestroy) bool { return !keep(r.Pod, r.PUID) })
	}
	return a, nil
}

// wallStep returns how far the program's wall clock stepped between its page read at a (headers ha) and the one read
// at b (hb), both read within within: b's time less a's, less their monotonic clock's difference, as their
// k8s.UptimeHeader tell it. It is 0 when either does not say, and when the pages are not of one process: of two
// k8s.InstanceHeaders, or (a program that does not tell it) a monotonic clock that went back, or moved by more than
// within, the program restarted between its pages (its container, on the same node: one wall clock, whose readings
// compare as they are).
func wallStep(a time.Time, ha http.Header, b time.Time, hb http.Header, within time.Duration) time.Duration {
	ua, erra := strconv.ParseInt(ha.Get(k8s.UptimeHeader), 10, 64)
	ub, errb := strconv.ParseInt(hb.Get(k8s.UptimeHeader), 10, 64)
	if erra != nil || errb != nil || ha.Get(k8s.InstanceHeader) != hb.Get(k8s.InstanceHeader) {
		return 0 // or two processes, each telling which it is
	}
	if moved := time.Duration(ub - ua); moved < 0 || moved > within+within/100+time.Millisecond {
		return 0
	}
	return b.Sub(a) - time.Duration(ub-ua)
}

// askAll asks every target, in order. It returns their answers and, one
// line each, the programs with a standby none of whose replicas asked runs
// its engine (each answered as a standby, Answer.Standby, or ended,
// Answer.Ended): what their leader holds, if one leads, is not told (a
// leader that has ended beside its standbys, say, which programs does not
// name as it does one with nothing in its place).
func (c *cluster) askAll(ctx context.Context, ts []target, keep func(pod, puID string) bool) ([]Answer, []string, error) {
	out := make([]Answer, 0, len(ts))
	for _, t := range ts {
		a, err := c.ask(ctx, t, keep)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
	}
	var unasked []string
	for i, a := range out {
		same := func(b Answer) bool {
			return b.Program.Program == a.Program.Program && b.Program.Release == a.Program.Release &&
				b.Program.Namespace == a.Program.Namespace && b.Program.Node == a.Program.Node // a release is one namespace's
		}
		// A program that elects a leader, whose replicas asked all stand by or have ended, has none asked (its leader
		// ended, and none leads yet, or one leads that was not asked).
		stopped := func(b Answer) bool { return b.Error == "" && (b.Standby || b.Ended) }
		if !stopped(a) || !elects(a.Program) || slices.ContainsFunc(out[:i], func(b Answer) bool { return same(b) && stopped(b) }) ||
			slices.ContainsFunc(out, func(b Answer) bool { return same(b) && !stopped(b) }) {
			continue
		}
		unasked = append(unasked, fmt.Sprintf("the leader of %s %s%s: every replica asked answered that its engine does not run "+
			"(a standby's, or one that ended): what the leader holds, if one leads, is not told", a.Program.Program, a.Program.Release, onNode(a.Program)))
	}
	return out, unasked, nil
}

// status gathers what status renders for node: every PU of its programs, and those it did not ask.
func (c *cluster) status(ctx context.Context, node string, now time.Time) (*NodeStatus, error) {
	ts, unasked, err := c.programs(ctx, node, false)
	if err != nil {
		return nil, err
	}
	answers, standby, err := c.askAll(ctx, ts, nil)
	if err != nil {
		return nil, err
	}
	return &NodeStatus{Now: now, Node: node, Answers: answers, Unasked: append(unasked, standby...)}, nil
}

// report gathers what report renders: every program's dry run's report, and the programs not asked.
func (c *cluster) report(ctx context.Context, now time.Time) (*Report, error) {
	ts, unasked, err := c.programs(ctx, "", true)
	if err != nil {
		return nil, err
	}
	answers, standby, err := c.askAll(ctx, ts, nil)
	if err != nil {
		return nil, err
	}
	return &Report{Now: now, Answers: answers, Unasked: append(unasked, standby...)}, nil
}

// explainPod gathers what explain pod renders for the pod namespace/name,
// or of UID uid (namespace and name "", or given too); node, when not "",
// is where the pod ran, for a pod that is gone.
func (c *cluster) explainPod(ctx context.Context, namespace, name, uid, node string, now time.Time) (*PodExplanation, error) {
	var notes []string
	began := time.Now()
	earlier := map[string][]earlierPU{} // the PUs an earlier round read, by PUID, one per program that held it
	for round := 1; ; round++ {
		x, again, err := c.explainRound(ctx, namespace, name, uid, node, now, began, round == maxRounds, earlier)
		if err != nil {
			return nil, err
		}
		if again == nil {
			x.Warnings = append(notes, x.Warnings...)
			x.Unasked = append(x.Unasked, gone(x, earlier)...)
			return x, nil
		}
		notes = append(notes, again...)
		for _, a := range x.Answers {
			for _, s := range a.PUs {
				e := earlierPU{program: a.Program, what: fmt.Sprintf("PU %s of pod %s, which %s held when an earlier round asked", s.PUID, s.Pod, a.Program),
					events: map[string]int{}}
				for _, ev := range x.before { // read before the program was asked: one written since it answered is not among them
					if ev.uid == s.PUID {
						e.events[ev.key] = ev.Count
					}
				}
				earlier[s.PUID] = append(slices.DeleteFunc(earlier[s.PUID], func(o earlierPU) bool { return o.program.same(a.Program) }), e)
			}
		}
	}
}

// earlierPU is a PU an earlier round of explainPod read: the program that
// held it, and the Events of its PUID that round read before it asked the
// programs (PodExplanation.before), each by its object
// with its count: an Event written since is one not among them, or a
// series grown since (no clock is compared: each program's Events are on
// its own, which may not be the clock of the program that held the PU).
type earlierPU struct {
	program Program
	what    string
	events  map[string]int
}

// gone says the PUs an earlier round of explainPod read (earlier) that x, the last, tells neither held by the program
// that held it, reported by its dry run, nor destroyed: destroyed meanwhile, their Events not yet written (the recorder
// writes them on a goroutine of its own, with retries), or held by a program the last round did not ask. The answer
// cannot tell what became of them. Each program's PU is its own: two programs hold PUs of one pod under one PUID (the
// pod's UID), and what one answers says nothing of the other's. An Event does not say which program posted it (all
// post as podsweeper): the Events of a PUID written since account for as many of its PUs gone from programs that post
// them, and, fewer, for none of them, for it cannot tell whose; cni-gc posts none.
func gone(x *PodExplanation, earlier map[string][]earlierPU) []string {
	var out []string
	for _, puid := range slices.Sorted(maps.Keys(earlier)) {
		var vanished []earlierPU
		for _, was := range earlier[puid] {
			held := slices.ContainsFunc(x.Answers, func(a Answer) bool { // held, or reported by its dry run (dropped)
				return a.Program.same(was.program) && (slices.ContainsFunc(a.PUs, func(s k8s.PUStatus) bool { return s.PUID == puid }) ||
					slices.ContainsFunc(a.Reports, func(d k8s.WouldDestroy) bool { return d.PUID == puid }))
			})
			if !held {
				vanished = append(vanished, was)
			}
		}
		posting := 0
		for _, was := range vanished {
			if postsEvents(was.program.Program) {
				posting++
			}
		}
		// An Event of that UID the round that read the PU held read too (the destroy of an earlier sandbox's PU, of
		// the same PUID) is not of what became of it, unless its series has grown since.
		told := 0
		for _, e := range x.Events {
			if e.uid == puid && slices.ContainsFunc(vanished, func(was earlierPU) bool { return e.Count > was.events[e.key] }) {
				told++
			}
		}
		for _, was := range vanished {
			if postsEvents(was.program.Program) && told >= posting {
				continue
			}
			out = append(out, was.what+": the last round found it in no answer and no Event (destroyed meanwhile, its Event not written yet, or held where it did not ask)")
		}
	}
	return out
}

// same reports whether p and q are one program: one release's program of
// one kind on one node (its pod may be another, restarted meanwhile or
// the cluster controller's next leader).
func (p Program) same(q Program) bool {
	return p.Program == q.Program && p.Release == q.Release && p.Namespace == q.Namespace && p.Node == q.Node
}

// postsEvents reports whether the program posts an Event of each destroy
// and give-up: the node agent and the cluster controller do, cni-gc none.
func postsEvents(program string) bool { return program != "cni-gc" }

// maxRounds bounds how many times explainPod asks the programs anew for a
// pod that changed while they were asked.
const maxRounds = 3

// explainRound is one round of explainPod: it reads the pod and its Events,
// asks the programs of its node (or of every node), then reads the pod and
// its Events again. When the pod of that name changed meanwhile so that
// other programs hold what is asked (deleted, recreated, or moved to a
// node that was not asked), again says how, and the round is to be asked
// anew (but the last, which says so and stands). earlier are the PUs the
// rounds before read, by PUID: one its programs still hold is kept in its
// answers, whatever the pod as read now says.
func (c *cluster) explainRound(ctx context.Context, namespace, name, uid, node string, now, began time.Time, last bool, earlier map[string][]earlierPU) (_ *PodExplanation, again []string, _ error) {
	flagNode := node
	x := &PodExplanation{Now: now, Namespace: namespace, Name: name, UID: uid, Node: node, Answers: []Answer{}, Events: []Event{}}
	var first *Pod // the pod of that name as first read, whatever its UID; nil: none
	if name != "" {
		p, err := c.cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			first = podOf(p)
		}
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, nil, c.refused(ctx, err, "get", "pods", namespace, clusterRole)
		case uid != "" && !podOf(p).is(uid):
			// Another pod than the one asked about: it is named in a
			// note, and nothing of it is said (as with --uid alone).
			x.Warnings = append(x.Warnings, fmt.Sprintf("the pod named %s/%s now has UID %s, not %s", namespace, name, p.UID, uid))
		default:
			x.Pod = podOf(p)
		}
	}
	evs, err := c.events(ctx, x)
	if err != nil {
		return nil, nil, err
	}
	x.Events, x.before = evs, evs
	if x.Name == "" && x.Namespace == "" {
		// Asked by UID alone: an Event that regards the pod names it, and
		// the pod of that name now, if it is that UID's, tells its node.
		for _, e := range evs {
			if ns, name, ok := strings.Cut(e.pod, "/"); ok && e.uid == x.UID {
				x.Namespace, x.Name = ns, name
			}
		}
		if first, err = c.podOfUID(ctx, x); err != nil {
			return nil, nil, err
		}
	}
	elsewhere := func(p *Pod) string { // the note of a pod that runs on another node than --node's
		return fmt.Sprintf("the pod runs on node %s, not %s (--node is for a pod that is gone): node %s's programs were asked", p.Node, flagNode, flagNode)
	}
	if node != "" && x.Pod != nil && x.Pod.Node != "" && x.Pod.Node != node {
		x.Warnings = append(x.Warnings, elsewhere(x.Pod))
	}
	if node == "" && x.Pod != nil {
		// The pod of that name is the one asked about: its PUs are on its
		// node. With another UID asked, x.Pod is nil: the earlier pod may
		// have run elsewhere, and is looked for as by --uid alone.
		node = x.Pod.Node
	}
	if node == "" && x.UID != "" {
		// A pod of that UID that is gone: where it ran is in the Events of
		// its destroys, if any; otherwise every node's programs are asked.
		// By name alone, a gone pod is every pod of that name, one of which
		// may hold a PU on another node than its Events name: every node's
		// programs are asked.
		for _, e := range evs {
			if e.node != "" && e.uid == x.UID {
				node = e.node
			}
		}
	}
	if node == "" {
		x.Warnings = append(x.Warnings, "the pod's node was not known when its programs were asked: every node's were (--node narrows it)")
	}
	askedNode, named, was := node, x.Name != "", first // what the programs are asked on
	if uid != "" && was != nil && !was.is(uid) {
		was = nil // another pod of that name: what becomes of it meanwhile is not what is asked
	}
	ts, unasked, err := c.programs(ctx, node, true)
	if err != nil {
		return nil, nil, err
	}
	x.Unasked = append(x.Unasked, unasked...)
	byUIDAlone := x.Name == "" && x.Namespace == ""
	// A PU an earlier round told is kept too: the pod as this round reads it may no longer say it is of the pod
	// asked (a static pod's mirror pod recreated under another UID), and the programs still hold it.
	matches := func(pod, puID string) bool { _, told := earlier[puID]; return told || x.Matches(pod, puID) }
	keep := matches
	if byUIDAlone {
		keep = nil // the pod is not known yet: a static pod's PU may be of its other UID (below)
	}
	answers, standby, err := c.askAll(ctx, ts, keep)
	if err != nil {
		return nil, nil, err
	}
	x.Answers = answers
	x.Unasked = append(x.Unasked, standby...)
	if byUIDAlone {
		// Asked by UID alone and named by no Event: name the pod from its
		// PU or its dry run's report, and say whether that pod is still the
		// one of that UID; then keep the PUs and reports of that pod, by
		// either UID of a static pod.
		for _, a := range answers {
			for _, s := range a.PUs {
				if s.PUID == x.UID {
					x.Namespace, x.Name, _ = strings.Cut(s.Pod, "/")
				}
			}
			for _, r := range a.Reports {
				if r.PUID == x.UID {
					x.Namespace, x.Name, _ = strings.Cut(r.Pod, "/")
				}
			}
		}
		if x.Name == "" {
			// A static pod asked by its mirror pod's UID: its PUs are
			// under the kubelet's UID, which its mirror pod names.
			if err := c.staticPodOf(ctx, x, answers); err != nil {
				return nil, nil, err
			}
		}
		if _, err := c.podOfUID(ctx, x); err != nil {
			return nil, nil, err
		}
		for i := range x.Answers {
			a := &x.Answers[i]
			a.PUs = slices.DeleteFunc(a.PUs, func(s k8s.PUStatus) bool { return !matches(s.Pod, s.PUID) })
			a.Reports = slices.DeleteFunc(a.Reports, func(r k8s.WouldDestroy) bool { return !matches(r.Pod, r.PUID) })
		}
		if flagNode != "" && x.Pod != nil && x.Pod.Node != "" && x.Pod.Node != flagNode {
			// Found only now, the pod runs on another node than the one asked: its programs were not asked.
			x.Warnings = append(x.Warnings, fmt.Sprintf("the pod runs on node %s, not %s (--node is for a pod that is gone): node %s's programs were asked", x.Pod.Node, flagNode, flagNode))
		}
	} else if x.UID != "" {
		// Asked by name and UID: a PU or a report of that UID that names another pod tells where it lives.
		named := map[string]bool{}
		for _, a := range answers {
			for _, s := range a.PUs {
				named[s.Pod] = named[s.Pod] || s.PUID == x.UID
			}
			for _, r := range a.Reports {
				named[r.Pod] = named[r.Pod] || r.PUID == x.UID
			}
		}
		for _, pod := range slices.Sorted(maps.Keys(named)) {
			if named[pod] && pod != x.Namespace+"/"+x.Name {
				x.Warnings = append(x.Warnings, fmt.Sprintf("a PU of UID %s is of pod %s, not %s/%s: explain pod %s", x.UID, pod, x.Namespace, x.Name, pod))
			}
		}
	}
	// The Events read again, and the pod, now that the programs answered: a PU destroyed after the first read and
	// before its program was asked is in neither its program's answer nor that read, and is in this one; a pod
	// deleted or recreated meanwhile is told as it is now. Asked by UID alone, an Event that came meanwhile may
	// name the pod.
	if x.Events, err = c.events(ctx, x); err != nil {
		return nil, nil, err
	}
	read := now.Add(time.Since(began)) // your clock when its Events were read, after the programs
	x.EventsAt = &read
	if x.Name == "" && x.Namespace == "" {
		for _, e := range x.Events {
			if ns, name, ok := strings.Cut(e.pod, "/"); ok && e.uid == x.UID {
				x.Namespace, x.Name = ns, name
			}
		}
		if _, err := c.podOfUID(ctx, x); err != nil {
			return nil, nil, err
		}
	}
	if named {
		p, err := c.cs.CoreV1().Pods(x.Namespace).Get(ctx, x.Name, metav1.GetOptions{})
		var now *Pod
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, nil, c.refused(ctx, err, "get", "pods", x.Namespace, clusterRole)
		default:
			now = podOf(p)
		}
		if uid != "" && now != nil && !now.is(uid) {
			now = nil // another pod of that name (--uid): not the one asked, whatever it does
		}
		var changed string
		switch {
		case was != nil && now == nil:
			changed = fmt.Sprintf("the pod %s/%s (UID %s) was deleted while its programs were asked", x.Namespace, x.Name, was.UID)
		case was == nil && now != nil:
			changed = fmt.Sprintf("a pod %s/%s (UID %s) was created while its programs were asked", x.Namespace, x.Name, now.UID)
		case was != nil && !now.is(was.UID):
			changed = fmt.Sprintf("the pod %s/%s was recreated while its programs were asked: UID %s, then %s", x.Namespace, x.Name, was.UID, now.UID)
		case was != nil && was.Node != now.Node:
			changed = fmt.Sprintf("the pod %s/%s was bound to node %s while its programs were asked", x.Namespace, x.Name, now.Node)
		}
		if changed != "" {
			x.Pod = nil
			if now != nil && (uid == "" || now.is(uid)) {
				x.Pod = now
			}
			// Other programs may hold what is asked: those of the pod's node now, or of every node for a pod gone.
			if reask := flagNode == "" && askedNode != "" && (x.Pod == nil || x.Pod.Node != askedNode); reask && !last {
				return x, []string{changed + ": they were asked again"}, nil
			} else if reask {
				if x.Pod != nil && x.Pod.Node != "" {
					changed += ": it kept changing, and the programs of its node now were not asked"
					x.Unasked = append(x.Unasked, fmt.Sprintf("the programs of node %s, where the pod runs now (it kept changing while they were asked)", x.Pod.Node))
				} else {
					changed += ": it kept changing, and the programs of the other nodes it may have run on were not asked"
					x.Unasked = append(x.Unasked, fmt.Sprintf("the programs of the nodes but %s, where a pod of that name may have run (it kept changing while they were asked)", askedNode))
				}
			}
			x.Warnings = append(x.Warnings, changed)
		}
	}
	for i, e := range x.Events {
		if x.Pod != nil && e.uid != "" && !x.Pod.is(e.uid) {
			x.Events[i].EarlierUID = e.uid
		}
	}
	if flagNode != "" && x.Pod != nil && x.Pod.Node != "" && x.Pod.Node != flagNode {
		// The pod runs, as it is now, on another node than the one asked: known at the first read, found by --uid
		// after the programs answered, or created or moved there meanwhile. One line, whichever.
		line := fmt.Sprintf("the programs of node %s, where the pod runs (--node %s was asked)", x.Pod.Node, flagNode)
		if !slices.Contains(x.Unasked, line) {
			x.Unasked = append(x.Unasked, line)
		}
		if note := elsewhere(x.Pod); !slices.Contains(x.Warnings, note) {
			x.Warnings = append(x.Warnings, note)
		}
	} else if flagNode != "" && x.Pod == nil && was != nil && was.Node != "" && was.Node != flagNode && (uid == "" || was.is(uid)) {
		// It ran on another node, and was deleted while the programs were asked: that node's may hold its PU.
		x.Unasked = append(x.Unasked, fmt.Sprintf("the programs of node %s, where the pod ran until it was deleted (--node %s was asked)", was.Node, flagNode))
	}
	if flagNode != "" && x.Pod == nil {
		// A pod that is gone, asked on one node: a node its destroys' Events name (explain.md: "its node is read from
		// the Events of its destroys") is where its other programs (cni-gc, which posts none) may hold a PU of it.
		for _, e := range x.Events {
			if e.node == "" || e.node == flagNode || x.UID != "" && e.uid != x.UID {
				continue
			}
			line := fmt.Sprintf("the programs of node %s, which an Event of the pod's destroy names (--node %s was asked)", e.node, flagNode)
			if !slices.Contains(x.Unasked, line) {
				x.Unasked = append(x.Unasked, line)
			}
		}
	}
	if flagNode != "" && x.UID != "" && x.Name == "" {
		// Asked by UID alone on one node, and named by nothing: a live pod cannot be looked up by its UID, and may
		// run on another node, whose programs hold its PUs.
		x.Unasked = append(x.Unasked, fmt.Sprintf("the programs of the nodes but %s, where a live pod of UID %s may run "+
			"(no PU and no Event names it, and a pod cannot be looked up by UID): ask without --node, or by its name", flagNode, x.UID))
	}
	return x, nil, nil
}

// maxStaticCandidates bounds how many pods staticPodOf reads.
const maxStaticCandidates = 32

// staticPodOf names in x the static pod of the UID x asks about (its
// mirror pod's, or the kubelet's the mirror pod names), when a program
// answered a PU or a report of it. A static pod is held under the kubelet's
// UID (a hash, not a UUID) by node-scoped programs, is named after its node
// (<name>-<node>), and its mirror pod is most often in kube-system: the pods
// of the answers are read in that order, those held under a UID that is no
// UUID, those named after a node of the programs asked, then kube-system's,
// then the others, at most maxStaticCandidates, and the first of that UID is
// the one. When it is not among those read, the answer cannot tell: what the
// others hold is named in x.Unasked. A node-scoped program need not run on
// the pod's node (a cluster controller alone holds a static pod's PU under
// its mirror pod's UID).
func (c *cluster) staticPodOf(ctx context.Context, x *PodExplanation, answers []Answer) error {
	var nodes []string // the nodes of the programs asked
	for _, a := range answers {
		if a.Program.Node != "" && !slices.Contains(nodes, a.Program.Node) {
			nodes = append(nodes, a.Program.Node)
		}
	}
	// Each pod in the first tier any of its PUs or reports puts it in: held under a kubelet's UID; named after a node
	// asked; of kube-system; the others.
	var order []string
	tierOf := map[string]int{}
	add := func(pod, puID string) {
		tier := 3
		switch {
		case puID != "" && !isUUID(puID):
			tier = 0
		case slices.ContainsFunc(nodes, func(n string) bool { return strings.HasSuffix(pod, "-"+n) }):
			tier = 1
		case strings.HasPrefix(pod, metav1.NamespaceSystem+"/"):
			tier = 2
		}
		if t, seen := tierOf[pod]; !seen {
			order = append(order, pod)
			tierOf[pod] = tier
		} else if tier < t {
			tierOf[pod] = tier
		}
	}
	for _, a := range answers { // a cluster-wide program's too: it holds the static pod under its mirror's UID
		for _, s := range a.PUs {
			add(s.Pod, s.PUID)
		}
		for _, r := range a.Reports {
			add(r.Pod, r.PUID)
		}
	}
	var tiers [4][]string
	for _, pod := range order {
		tiers[tierOf[pod]] = append(tiers[tierOf[pod]], pod)
	}
	candidates := slices.Concat(tiers[:]...)
	var unread []string
	if len(candidates) > maxStaticCandidates {
		candidates, unread = candidates[:maxStaticCandidates], candidates[maxStaticCandidates:]
	}
	for _, pod := range candidates {
		ns, name, _ := strings.Cut(pod, "/")
		p, err := c.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return c.refused(ctx, err, "get", "pods", ns, clusterRole)
		case podOf(p).is(x.UID): // by the mirror pod's UID, or the kubelet's it names
			x.Namespace, x.Name = ns, name
			return nil
		}
	}
	if len(unread) > 0 {
		x.Unasked = append(x.Unasked, fmt.Sprintf("the PUs of %d pods the programs hold, beyond the %d read to find the static pod of UID %s "+
			"(those held under a kubelet's UID first, then those named after a node asked, then kube-system's): one may be it "+
			"(ask by its mirror pod's name)", len(unread), maxStaticCandidates, x.UID))
	}
	return nil
}

// isUUID reports whether s is a UUID as the API server gives pods
// (8-4-4-4-12 hex digits); a static pod's kubelet UID is a hash, not one.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case !strings.ContainsRune("0123456789abcdefABCDEF", r):
			return false
		}
	}
	return true
}

// podOfUID sets x.Pod to the pod named x.Namespace/x.Name when it is of
// the UID asked about, and notes it when it is another; nothing when x
// names none. It returns the pod of that name, whatever its UID (nil:
// none).
func (c *cluster) podOfUID(ctx context.Context, x *PodExplanation) (*Pod, error) {
	if x.Name == "" {
		return nil, nil
	}
	p, err := c.cs.CoreV1().Pods(x.Namespace).Get(ctx, x.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, c.refused(ctx, err, "get", "pods", x.Namespace, clusterRole)
	case podOf(p).is(x.UID):
		x.Pod = podOf(p)
	default:
		x.Warnings = append(x.Warnings, fmt.Sprintf("the pod named %s/%s now has UID %s, not %s", x.Namespace, x.Name, p.UID, x.UID))
	}
	return podOf(p), nil
}

// podOf is what is said of p.
func podOf(p *corev1.Pod) *Pod {
	pod := &Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName,
		Phase: string(p.Status.Phase), Deleting: p.DeletionTimestamp != nil}
	if uid := p.Annotations[corev1.MirrorPodAnnotationKey]; uid != "" && uid != pod.UID {
		pod.StaticUID = uid
	}
	return pod
}

// events returns the podsweeper Events of the pod of x, oldest first: those
// regarding the pod (by name, or by UID), and those regarding a node that
// name it as their related object.
func (c *cluster) events(ctx context.Context, x *PodExplanation) ([]Event, error) {
	var lists []*corev1.EventList
	if x.Name != "" {
		l, err := c.cs.CoreV1().Events(x.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": x.Name}.String()})
		if err != nil {
			return nil, c.refused(ctx, err, "list", "events", x.Namespace, clusterRole)
		}
		lists = append(lists, l)
	} else {
		l, err := c.cs.CoreV1().Events("").List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Pod", "involvedObject.uid": x.UID}.String()})
		if err != nil {
			return nil, c.refused(ctx, err, "list", "events", "", clusterRole)
		}
		lists = append(lists, l)
	}
	// The Events of a destroy for a pod that is gone regard the node, in "default".
	for _, reason := range []string{k8s.EventReasonDestroyed, k8s.EventReasonAbandoned} {
		l, err := c.cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Node", "reason": reason}.String()})
		if err != nil {
			return nil, c.refused(ctx, err, "list", "events", metav1.NamespaceDefault, clusterRole)
		}
		lists = append(lists, l)
	}
	var out []Event
	for _, l := range lists {
		for _, e := range l.Items {
			if e.Reason != k8s.EventReasonDestroyed && e.Reason != k8s.EventReasonAbandoned {
				continue
			}
			if e.ReportingController != "" && e.ReportingController != "podsweeper" {
				continue
			}
			of := e.InvolvedObject
			if of.Kind == "Node" {
				if e.Related == nil {
					continue
				}
				of = *e.Related
			}
			if !x.Matches(of.Namespace+"/"+of.Name, string(of.UID)) {
				continue
			}
			out = append(out, eventOf(e))
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// eventOf is what is said of e: its note with the time of its first
// occurrence, whose note it is (a series keeps its first Event's note), and,
// for a series, its count and its last time.
func eventOf(e corev1.Event) Event {
	t, tExact := e.EventTime.Time, !e.EventTime.IsZero() // microseconds; the timestamps are in seconds
	if t.IsZero() {
		t = e.FirstTimestamp.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	last, lastExact := e.LastTimestamp.Time, false
	if e.Series != nil && !e.Series.LastObservedTime.IsZero() {
		last, lastExact = e.Series.LastObservedTime.Time, true
	}
	if t.IsZero() {
		t, tExact = last, lastExact
	}
	count := max(1, int(e.Count)) // core/v1's count, or events.k8s.io's series
	if e.Series != nil && int(e.Series.Count) > count {
		count = int(e.Series.Count)
	}
	if count == 1 { // a last time before the first, or the same, is told too: the poster's clock stepped back between
		last = time.Time{}
	}
	regarding := e.InvolvedObject.Kind + "/"
	if e.InvolvedObject.Namespace != "" {
		regarding += e.InvolvedObject.Namespace + "/"
	}
	uid, node, pod := string(e.InvolvedObject.UID), "", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name
	if e.InvolvedObject.Kind == "Node" {
		node, uid, pod = e.InvolvedObject.Name, "", ""
		if e.Related != nil {
			uid, pod = string(e.Related.UID), e.Related.Namespace+"/"+e.Related.Name
		}
	}
	ev := Event{Time: t.UTC(), Type: e.Type, Reason: e.Reason, Regarding: regarding + e.InvolvedObject.Name, Note: e.Message, Count: count,
		uid: uid, node: node, pod: pod, timeExact: tExact, key: e.Namespace + "/" + e.Name}
	if !last.IsZero() {
		ev.Last, ev.lastExact = last.UTC(), lastExact
	}
	return ev
}

// addressPath is cni-gc's page of an address (adapters/cni's AddressPath,
// which TestAddressStatusIsCNIs holds it to).
const addressPath = "/debug/podsweeper/cni/address"

// explainIP gathers what explain ip renders for the address ip on node:
// what cni-gc on that node holds and decided of it (cni.AddressPath: addressPath), the
// PUs of its engine of the pods that hold it, and those pods as the API
// server has them now.
func (c *cluster) explainIP(ctx context.Context, ip, node string, now time.Time) (*IPExplanation, error) {
	x := &IPExplanation{Now: now, IP: ip, Node: node}
	ts, unasked, err := c.programs(ctx, node, false)
	if err != nil {
		return nil, err
	}
	ts = slices.DeleteFunc(ts, func(t target) bool { return t.Program.Program != "cni-gc" })
	// A cni-gc of the node that does not run (Pending, Unknown) holds its own latest frees too.
	// So may a cni-gc of another namespace than --namespace's, not listed.
	notRunning := slices.DeleteFunc(unasked, func(u string) bool {
		return !strings.HasPrefix(u, "cni-gc ") && !strings.HasPrefix(u, "the programs of other namespaces")
	})
	if len(ts) == 0 {
		x.Unasked = notRunning
		return x, nil
	}
	// Each cni-gc of the node (two releases, or a rollout's surge) until one tells something of the address: they
	// read the same node, and each holds its own latest frees. The first that answered stands when none tells.
	var got addressAnswer
	answered := -1
	for i, t := range ts {
		ans, why, err := c.askAddress(ctx, t, ip)
		if err != nil {
			return nil, err
		}
		if why == "" && ans.st.IP != ip {
			why = fmt.Sprintf("it answered for address %s, not %s", ans.st.IP, ip)
		}
		if why != "" {
			if i == 0 {
				x.Program, x.Error = &ts[0].Program, why
			}
			// Each cni-gc holds its own latest frees: one that could not be asked may have freed the address.
			x.Unasked = append(x.Unasked, fmt.Sprintf("%s%s could not be asked: %s", t.Program, onNode(t.Program), why))
			continue
		}
		if answered < 0 {
			answered, got = i, ans
		}
		if held := ans.st; len(held.Attachments) > 0 || len(held.Reservations) > 0 || len(held.Freed) > 0 {
			answered, got = i, ans
			break
		}
	}
	if answered >= 0 {
		x.Program, x.Error = &ts[answered].Program, ""
	}
	if got.st == nil && len(x.Unasked) > 0 {
		x.Unasked = x.Unasked[1:] // none answered: the first's error says why it could not be asked; the others are named
	}
	x.Unasked = append(x.Unasked, notRunning...)
	if got.st == nil {
		return x, nil
	}
	st, pus := got.st, got.pus
	x.Address, x.At, x.PUsAt, x.PUsError, x.Standby, x.Ended = st, got.at, got.pusAt, got.pusErr, got.standby, got.ended
	seen := map[string]bool{}
	pod := func(namespace, name, uid string) error {
		if name == "" || seen[namespace+"/"+name+"/"+uid] {
			return nil
		}
		seen[namespace+"/"+name+"/"+uid] = true
		pn := PodNow{Namespace: namespace, Name: name, UID: uid}
		p, err := c.cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return c.refused(ctx, err, "get", "pods", namespace, clusterRole)
		default:
			pn.Pod = podOf(p)
		}
		x.Pods = append(x.Pods, pn)
		for _, s := range pus {
			if s.PUID == uid {
				x.PUs = append(x.PUs, s)
			}
		}
		return nil
	}
	for _, a := range st.Attachments {
		if err := pod(a.PodNamespace, a.PodName, a.PodUID); err != nil {
			return nil, err
		}
	}
	for _, f := range st.Freed {
		if err := pod(f.PodNamespace, f.PodName, f.PodUID); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// askAddress asks cni-gc's pod t what it holds of ip, and its engine's
// PUs; why says why it could not be asked, err is a refusal of RBAC.
// addressAnswer is what cni-gc answered of an address: its address page (st), its status page (pus), and when each
// answered.
type addressAnswer struct {
	st        *AddressStatus
	pus       []k8s.PUStatus
	at, pusAt time.Time
	// pusErr says why its status page could not be read; "" when it was.
	pusErr string
	// standby: its status page says its engine does not run; ended: that
	// its engine's Start has returned (k8s.EngineHeader).
	standby, ended bool
}

func (c *cluster) askAddress(ctx context.Context, t target, ip string) (a addressAnswer, why string, err error) {
	port, why := statusPortNumber(t.port)
	if why != "" {
		return a, why, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	f, err := c.portForward(ctx, t.Namespace, t.Pod, port)
	var forbidden *forbiddenError
	if errors.As(err, &forbidden) {
		return a, "", err
	}
	if err != nil {
		return a, err.Error(), nil
	}
	defer f.close()
	code, body, at, _, err := f.get(ctx, addressPath+"?"+url.Values{"ip": {ip}}.Encode())
	switch {
	case err != nil:
		return a, fmt.Sprintf("reading what it holds of %s on port %d: %v", ip, port, err), nil
	case code == http.StatusNotFound:
		return a, fmt.Sprintf("it serves no %s: its image predates explain ip", addressPath), nil
	case code != http.StatusOK:
		return a, fmt.Sprintf("%s answered %d: %s", addressPath, code, strings.TrimSpace(string(body))), nil
	}
	st := &AddressStatus{}
	if err := json.Unmarshal(body, st); err != nil {
		return a, fmt.Sprintf("reading what it holds of %s: %v", ip, err), nil
	}
	var pus []k8s.PUStatus
	code, body, pusAt, h, err := f.get(ctx, k8s.StatusPath)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("%s answered %d: %s", k8s.StatusPath, code, strings.TrimSpace(string(body)))
	}
	if err == nil {
		pus, err = decodePUs(body)
	}
	if err != nil {
		// The address's answer stands: only its PUs are not told.
		return addressAnswer{st: st, at: at, pusErr: fmt.Sprintf("its status page (%s) on port %d: %v", k8s.StatusPath, port, err)}, "", nil
	}
	return addressAnswer{st: st, pus: pus, at: at, pusAt: pusAt, standby: h.Get(k8s.EngineHeader) == k8s.EngineNotRunning,
		ended: h.Get(k8s.EngineHeader) == k8s.EngineEnded}, "", nil
}

// decodeReport decodes a dry run's report page: a JSON object with its total and its reports (a list). A page of
// another shape (null, a list, an object without them) is no program's report, and tells nothing of what it would do.
func decodeReport(body []byte) (total int, reports []k8s.WouldDestroy, err error) {
	var r struct {
		Total   *int            `json:"total"`
		Reports json.RawMessage `json:"reports"`
	}
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return 0, nil, errors.New("its answer is not a JSON object (a program's report is one, with its total and its reports)")
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, nil, err
	}
	if r.Total == nil || r.Reports == nil {
		return 0, nil, errors.New("its answer has no total or no reports (a program's report has both)")
	}
	if err := decodeList(r.Reports, &reports); err != nil {
		return 0, nil, fmt.Errorf("its reports: %w", err)
	}
	for i, w := range reports {
		if w.PUID == "" || !podName(w.Pod) || w.Reason == "" || w.At.IsZero() {
			return 0, nil, fmt.Errorf("its report %d is no report (a report names its PU, its pod (namespace/name), its reason and when)", i)
		}
	}
	return *r.Total, reports, nil
}

// decodePUs decodes a program's status page: a JSON array of PUs, each with its PUID, its pod (namespace/name) and
// its state. A list of anything else ([{"hello":"world"}]) is no program's status page, and tells nothing of what
// it holds.
func decodePUs(body []byte) ([]k8s.PUStatus, error) {
	var pus []k8s.PUStatus
	if err := decodeList(body, &pus); err != nil {
		return nil, err
	}
	for i, pu := range pus {
		if pu.PUID == "" || pu.State == "" || !podName(pu.Pod) {
			return nil, fmt.Errorf("its entry %d is no PU (a program's status page names each PU, its pod and its state)", i)
		}
	}
	return pus, nil
}

// podName reports whether s names a pod as the programs' pages do: namespace/name.
func podName(s string) bool {
	ns, name, ok := strings.Cut(s, "/")
	return ok && ns != "" && name != ""
}

// decodeList decodes a page's JSON array into v: a page that answers no array (null, an object) is no program's
// status page, and tells nothing of what it holds.
func decodeList[T any](body []byte, v *[]T) error {
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '[' {
		return errors.New("its answer is not a JSON list (a program's page answers one, [] for none)")
	}
	return json.Unmarshal(body, v)
}
