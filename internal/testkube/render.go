package testkube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tool returns the path of the tool that `make test` names in the
// environment variable env (HELM, KUSTOMIZE_RENDER, PROMTOOL, KWOK,
// PROMQL_METRICS: binaries built from hack/tools/), and skips the test
// without it, or fails it under CI=true.
func Tool(t testing.TB, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: run the tests with `make test`", env)
		}
		t.Skipf("%s is not set: run `make test`, which builds it from hack/tools/", env)
	}
	return path
}

// RenderKustomize returns the objects the kustomization in dir builds, as
// `kustomize build` would (sigs.k8s.io/kustomize/api's krusty, through
// $KUSTOMIZE_RENDER).
func RenderKustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, run(t, exec.Command(Tool(t, "KUSTOMIZE_RENDER"), dir)))
}

// RenderHelm returns the objects the chart in dir renders as a release
// named release in namespace, with the values files given (none: the
// chart's defaults), through $HELM (helm template). Helm's cache and
// config stay in directories of the test.
func RenderHelm(t testing.TB, dir, release, namespace string, valuesFiles ...string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, run(t, helmTemplate(t, dir, release, namespace, valuesFiles...)))
}

// helmTemplate is the command of RenderHelm.
func helmTemplate(t testing.TB, dir, release, namespace string, valuesFiles ...string) *exec.Cmd {
	t.Helper()
	args := []string{"template", release, dir, "--namespace", namespace}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	cmd := exec.Command(Tool(t, "HELM"), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	return cmd
}

// RenderHelmRefused renders the chart in dir as RenderHelm does, with the
// values files given, expects helm to refuse them, and returns what it
// said.
func RenderHelmRefused(t testing.TB, dir, release, namespace string, valuesFiles ...string) string {
	t.Helper()
	cmd := helmTemplate(t, dir, release, namespace, valuesFiles...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.Error(t, cmd.Run(), "helm renders the values: %s", stdout.String())
	return stderr.String()
}

// ValuesFile writes yaml to a values file of the test and returns its path.
func ValuesFile(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

// run returns what cmd writes on its standard output, and fails the test
// with its standard error if it fails.
func run(t testing.TB, cmd *exec.Cmd) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s: %s", strings.Join(cmd.Args, " "), stderr.String())
	return stdout.Bytes()
}

// decode reads a stream of YAML documents, skipping empty ones.
func decode(t testing.TB, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	require.NotEmpty(t, objs, "nothing rendered")
	return objs
}

// dryRun are the options of DryRunApply's creates: nothing stored, and
// each field checked strictly.
var dryRun = []client.CreateOption{client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict)}

// DryRunApply sends every object of objs to the API server of c, which
// validates it against its real schema and admission, each field strictly
// (an unknown or duplicate field fails, as kubectl's default does; the API
// server's own default only warns): Namespaces (those
// of objs, and namespace, the release's namespace of a chart, which the
// chart does not create) are created for real, so that the objects in
// them can be; every other object is created with server-side dry-run
// (nothing is stored).
func DryRunApply(t testing.TB, c client.Client, namespace string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	create := func(u *unstructured.Unstructured, opts ...client.CreateOption) {
		t.Helper()
		err := c.Create(ctx, u.DeepCopy(), opts...)
		if u.GetKind() == "Namespace" && apierrors.IsAlreadyExists(err) {
			return
		}
		require.NoError(t, err, "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	create(ns)
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			create(u)
		}
	}
	for _, u := range objs {
		if u.GetKind() != "Namespace" {
			create(u, dryRun...)
		}
	}
}

// Grants is the RBAC a render gives: what the workload's ServiceAccount
// may do cluster-wide and in its own namespace, and the rules of the roles
// the render binds to nobody (for the operator to bind, as the node
// agent's metrics reader), each rule as one sorted line per group,
// resource (or non-resource URL) and verb. Names, labels and namespaces do
// not count: two renders that grant the same give the same Grants.
type Grants struct {
	ClusterWide, InNamespace, Unbound []string
}

// RBAC returns the Grants of objs to serviceAccount, the ServiceAccount
// that the workload's pods run as, in namespace.
func RBAC(t testing.TB, objs []*unstructured.Unstructured, namespace, serviceAccount string) Grants {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{} // "ClusterRole/name" or "Role/ns/name"
	bound := map[string]bool{}
	var g Grants
	convert := func(u *unstructured.Unstructured, into any) {
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true), u.GetKind())
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			convert(u, &r)
			roles["ClusterRole/"+r.Name] = r.Rules
		case "Role":
			var r rbacv1.Role
			convert(u, &r)
			roles["Role/"+r.Namespace+"/"+r.Name] = r.Rules
		}
	}
	subject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == namespace
		})
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			convert(u, &b)
			key := "ClusterRole/" + b.RoleRef.Name
			bound[key] = true
			if subject(b.Subjects) {
				g.ClusterWide = append(g.ClusterWide, ruleLines(roles[key])...)
			}
		case "RoleBinding":
			var b rbacv1.RoleBinding
			convert(u, &b)
			key := "ClusterRole/" + b.RoleRef.Name
			if b.RoleRef.Kind == "Role" {
				key = "Role/" + b.Namespace + "/" + b.RoleRef.Name
			}
			bound[key] = true
			if subject(b.Subjects) && b.Namespace == namespace {
				g.InNamespace = append(g.InNamespace, ruleLines(roles[key])...)
			}
		}
	}
	for key, rules := range roles {
		if !bound[key] {
			g.Unbound = append(g.Unbound, ruleLines(rules)...)
		}
	}
	for _, l := range []*[]string{&g.ClusterWide, &g.InNamespace, &g.Unbound} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return g
}

// ruleLines writes each rule as "group/resource verb" lines (with the
// resource names, if any) and "url verb" for non-resource URLs.
func ruleLines(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					line := fmt.Sprintf("%s/%s %s", g, res, v)
					if len(r.ResourceNames) > 0 {
						line += " names=" + strings.Join(slices.Sorted(slices.Values(r.ResourceNames)), ",")
					}
					out = append(out, line)
				}
			}
			for _, u := range r.NonResourceURLs {
				out = append(out, fmt.Sprintf("%s %s", u, v))
			}
		}
	}
	return out
}

// PodTemplate returns the pod spec of the one workload of kind (DaemonSet
// or Deployment) in objs, and its one container.
func PodTemplate(t testing.TB, objs []*unstructured.Unstructured, kind string) (corev1.PodSpec, corev1.Container) {
	t.Helper()
	var w struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	var found *unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == kind {
			require.Nil(t, found, "one %s rendered", kind)
			found = u
		}
	}
	require.NotNil(t, found, "a %s rendered", kind)
	tmpl, ok, err := unstructured.NestedMap(found.Object, "spec", "template")
	require.NoError(t, err)
	require.True(t, ok, "%s has a pod template", kind)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(tmpl, &w.Spec.Template, true))
	spec := w.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	return spec, spec.Containers[0]
}

// Rendered is a program's manifests rendered three ways, each checked
// against a real API server: its kustomize base, its chart with the
// defaults, and its chart with testdata/chart-values.yaml. Each has the
// pod template of its workload and that pod's first container.
type Rendered struct {
	Kustomize, Defaults, Values             []*unstructured.Unstructured
	KustomizeSpec, DefaultsSpec, ValuesSpec corev1.PodSpec
	KustomizeC, DefaultsC, ValuesC          corev1.Container
}

// RenderBoth renders deploy/ (kustomize, into namespace) and chart/ (helm:
// release "podsweeper" into namespace with the chart's defaults; release
// valuesRelease into valuesNamespace with testdata/chart-values.yaml),
// sends every object to a real API server (with prometheus-operator's
// PrometheusRule and ServiceMonitor CRDs installed) with server-side dry-run, and
// checks that the three run the same image for the defaults and grant the
// workload's (kind's) ServiceAccount the same RBAC, cluster-wide rules
// among them.
func RenderBoth(t testing.TB, kind, namespace, valuesRelease, valuesNamespace string) Rendered {
	t.Helper()
	r := Rendered{
		Kustomize: RenderKustomize(t, "deploy"),
		Defaults:  RenderHelm(t, "chart", "podsweeper", namespace),
		Values:    RenderHelm(t, "chart", valuesRelease, valuesNamespace, "testdata/chart-values.yaml"),
	}
	rc, _ := StartAPIServer(t)
	InstallPrometheusOperatorCRDs(t, rc)
	c, err := client.New(rc, client.Options{})
	require.NoError(t, err)
	DryRunApply(t, c, namespace, r.Kustomize)
	DryRunApply(t, c, namespace, r.Defaults)
	DryRunApply(t, c, valuesNamespace, r.Values)
	r.KustomizeSpec, r.KustomizeC = PodTemplate(t, r.Kustomize, kind)
	r.DefaultsSpec, r.DefaultsC = PodTemplate(t, r.Defaults, kind)
	r.ValuesSpec, r.ValuesC = PodTemplate(t, r.Values, kind)
	assert.Equal(t, r.KustomizeC.Image, r.DefaultsC.Image, "both run the image of the same tag")
	want := RBAC(t, r.Kustomize, namespace, r.KustomizeSpec.ServiceAccountName)
	require.NotEmpty(t, want.ClusterWide)
	assert.Equal(t, want, RBAC(t, r.Defaults, namespace, r.DefaultsSpec.ServiceAccountName), "the chart's defaults grant what deploy/ grants")
	assert.Equal(t, want, RBAC(t, r.Values, valuesNamespace, r.ValuesSpec.ServiceAccountName), "the chart's values change no grant")
	return r
}
