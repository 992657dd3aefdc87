package testdeploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/podsweeper/podsweeper/internal/testcontainerd"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/internal/testnode"
)

// Env is a cluster and a containerd node on it, ready for a program's pods.
type Env struct {
	Cluster *testnode.Cluster
	Node    *testcontainerd.Node
}

// Start starts a cluster whose API server issues ServiceAccount tokens and
// whose certificate names the node's address, and a containerd node named
// node on it, as testcontainerd.Start does with opts, and as on a real
// node: SharedMounts (a DaemonSet's HostToContainer mounts need them), and
// unless opts give a ConfList, the default network with a default route in
// the pods (PodNetwork), through which they reach the node's address.
// Both stop when the test ends.
func Start(t *testing.T, node string, opts testcontainerd.Options) *Env {
	t.Helper()
	c := testnode.StartClusterWith(t, testnode.ClusterOptions{
		ServingIPs:      []string{testcontainerd.NodeIP},
		ServiceAccounts: true,
		NodeEgress:      true,
	})
	opts.SharedMounts = true
	if opts.ConfList == nil {
		opts.ConfList = PodNetwork(t, opts.Subnet)
	}
	e := &Env{Cluster: c, Node: testcontainerd.Start(t, c, node, opts)}
	c.DialNodesWith(t, e.dialNode)
	e.untaintReady(t)
	return e
}

// dialNode is the API server's way to the node (testnode's NodeEgress):
// the node by its name or its address is its own loopback, where the
// kubelet listens (its port as the node reports it); any other address (a
// pod's) is dialed from the node's network.
func (e *Env) dialNode(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == e.Node.Name || host == testcontainerd.NodeIP {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	return e.Node.DialContext(ctx, "tcp", addr)
}

// untaintReady removes the node.kubernetes.io/not-ready taint of the
// node, which is Ready, as kube-controller-manager's node lifecycle
// controller does: the API server's TaintNodesByCondition admission puts
// it on every node it registers, and nothing else takes it off.
func (e *Env) untaintReady(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	// The kubelet's heartbeats change the node too: read it again on a conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := e.Cluster.Client.Get(ctx, client.ObjectKey{Name: e.Node.Name}, node); err != nil {
			return err
		}
		if !nodeReady(node) {
			return fmt.Errorf("node %s is not Ready", node.Name)
		}
		var kept []corev1.Taint
		for _, taint := range node.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				kept = append(kept, taint)
			}
		}
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		return e.Cluster.Client.Update(ctx, node)
	}), "taking the not-ready taint off node %s", e.Node.Name)
}

// nodeReady reports whether the node's Ready condition is true.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodNetwork returns the node's default network (testcontainerd's
// DefaultConfList on subnet, DefaultSubnet when "") with a default route
// in each pod through the bridge, the pods' gateway, as a cluster's pod
// network gives them: host-local hands out no route unless its config
// names one, and without it a pod reaches its own subnet only.
func PodNetwork(t *testing.T, subnet string) []byte {
	t.Helper()
	if subnet == "" {
		subnet = testcontainerd.DefaultSubnet
	}
	var conf map[string]any
	require.NoError(t, json.Unmarshal(testcontainerd.DefaultConfList(subnet), &conf))
	plugins, _ := conf["plugins"].([]any)
	require.Len(t, plugins, 1, "the default network has one plugin")
	ipam, _ := plugins[0].(map[string]any)["ipam"].(map[string]any)
	require.NotNil(t, ipam, "the bridge plugin's ipam")
	ipam["routes"] = []any{map[string]any{"dst": "0.0.0.0/0"}}
	b, err := json.Marshal(conf)
	require.NoError(t, err)
	return b
}

// Image is a program's image as `make images` wrote it.
type Image struct {
	// Program is its name in examples/.
	Program string
	// Repository is the image's name without its tag, as the chart's
	// image.repository takes it (podsweeper-<program>).
	Repository string
	// Digest is its manifest's digest, sha256:..., as the chart's
	// image.digest takes it.
	Digest string
	// Archive is the OCI layout as a tar that ImportImage imported.
	Archive string
}

// Ref returns the image's reference by digest, as the pod names it.
func (i Image) Ref() string { return i.Repository + "@" + i.Digest }

// ImportImage imports the image of program (IMAGES_DIR/<program>.oci.tar,
// which `make images` writes and `make test` names) into the node's
// containerd, and returns it. Without it the test is skipped (failed under
// CI=true). A node's Reboot loses it: import it again after.
func (e *Env) ImportImage(t *testing.T, program string) Image {
	t.Helper()
	dir := os.Getenv("IMAGES_DIR")
	if dir == "" {
		testnode.Unavailable(t, "IMAGES_DIR is not set: run `make test` (which runs `make images`)")
	}
	return e.ImportImageFrom(t, dir, program)
}

// ImportImageFrom imports the image of program that `make images` or
// `make image` wrote into dir.
func (e *Env) ImportImageFrom(t *testing.T, dir, program string) Image {
	t.Helper()
	archive := filepath.Join(dir, program+".oci.tar")
	index, err := os.ReadFile(filepath.Join(dir, program, "index.json"))
	if err != nil {
		testnode.Unavailable(t, "the image of %s: %v: run `make images`", program, err)
	}
	if _, err := os.Stat(archive); err != nil {
		testnode.Unavailable(t, "the image of %s: %v: run `make images`", program, err)
	}
	var idx struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal(index, &idx), "%s/index.json", program)
	require.Len(t, idx.Manifests, 1, "%s/index.json: one image", program)
	m := idx.Manifests[0]
	name := m.Annotations["io.containerd.image.name"]
	repo, _, ok := strings.Cut(strings.TrimPrefix(name, "docker.io/library/"), ":")
	require.True(t, ok && repo != "", "%s/index.json names the image %q", program, name)
	e.Node.ImportImage(t, archive, "docker.io/library/"+repo)
	return Image{Program: program, Repository: repo, Digest: m.Digest, Archive: archive}
}

// Values returns the chart values that run img on this node: the image by
// its digest (imported, so never pulled: pullPolicy IfNotPresent, the
// charts' default) and the API server's address as the node relays it
// (kubeAPI.host, kubeAPI.port).
func (e *Env) Values(t *testing.T, img Image) map[string]any {
	t.Helper()
	host, port, err := net.SplitHostPort(e.Node.APIServerAddr)
	require.NoError(t, err)
	return map[string]any{
		"image":   map[string]any{"repository": img.Repository, "digest": img.Digest, "pullPolicy": "IfNotPresent"},
		"kubeAPI": map[string]any{"host": host, "port": port},
	}
}

// Render renders the chart in dir as release in namespace with values
// (written to a values file of the test's), through helm (testkube.RenderHelm).
func Render(t *testing.T, dir, release, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	b, err := yaml.Marshal(values)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(file, b, 0o600))
	return testkube.RenderHelm(t, dir, release, namespace, file)
}

// Apply creates the release's namespace (with what the controller manager
// would put in it: testnode.Cluster.CreateNamespace) and every object of
// objs in it through the API server, namespaces first, as `helm install`
// does; each object is validated and admitted for real.
func (e *Env) Apply(t *testing.T, namespace string, objs []*unstructured.Unstructured) {
	t.Helper()
	e.createNamespace(t, namespace)
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			e.createNamespace(t, u.GetName())
		}
	}
	ctx := context.Background()
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		obj := u.DeepCopy()
		if obj.GetNamespace() == "" && namespaced(u.GetKind()) {
			obj.SetNamespace(namespace)
		}
		require.NoError(t, e.Cluster.Client.Create(ctx, obj), "%s %s/%s", u.GetKind(), obj.GetNamespace(), u.GetName())
	}
}

// Named returns the name of the one object of kind in objs (the
// DaemonSet, the Deployment of a render).
func Named(t *testing.T, objs []*unstructured.Unstructured, kind string) string {
	t.Helper()
	var names []string
	for _, u := range objs {
		if u.GetKind() == kind {
			names = append(names, u.GetName())
		}
	}
	require.Len(t, names, 1, "one %s rendered", kind)
	return names[0]
}

// createNamespace creates name unless it exists.
func (e *Env) createNamespace(t *testing.T, name string) {
	t.Helper()
	err := e.Cluster.Client.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Namespace{})
	if apierrors.IsNotFound(err) {
		e.Cluster.CreateNamespace(t, name)
		return
	}
	require.NoError(t, err)
}

// namespaced reports whether objects of kind live in a namespace (the
// kinds the charts render).
func namespaced(kind string) bool {
	switch kind {
	case "ClusterRole", "ClusterRoleBinding", "Namespace", "PersistentVolume", "PriorityClass":
		return false
	}
	return true
}

// ReadyTimeout bounds WaitReady: a program's pod from a local image is
// Ready within seconds; its startup probe allows two minutes.
const ReadyTimeout = 3 * time.Minute

// WaitReady waits for the pod to be Ready (its Ready condition true, as
// the kubelet reports it once its readiness probe passes) and returns it
// as the API server has it then. On a timeout it fails the test with the
// pod's status, its Events and its containers' logs.
func (e *Env) WaitReady(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(ReadyTimeout)
	for {
		p := &corev1.Pod{}
		err := e.Cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), p)
		if err == nil && Ready(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not Ready after %v (%v)\n%s", pod.Namespace, pod.Name, ReadyTimeout, err, e.Describe(t, p))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Ready reports whether the pod's Ready condition is true.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// LogsOnFailure has the test log, once it has failed, the last lines of
// the containers' logs of each pod as it ran when the test ended: what the
// programs said about the failure. Call it after Start, so that the logs
// are read before the node is torn down.
func (e *Env) LogsOnFailure(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, p := range pods {
			for _, c := range p.Spec.Containers {
				lines := e.Node.ContainerLog(t, p, c.Name)
				if len(lines) > 300 {
					lines = lines[len(lines)-300:]
				}
				var b strings.Builder
				for _, l := range lines {
					b.WriteString(l.Text + "\n")
				}
				t.Logf("the log of %s/%s, container %s (its last %d lines):\n%s", p.Namespace, p.Name, c.Name, len(lines), b.String())
			}
		}
	})
}

// Describe returns what a person would look at for a pod that does not
// run: its status, its Events, and the last lines of its containers' logs.
func (e *Env) Describe(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	status, err := yaml.Marshal(p.Status)
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("status:\n" + string(status) + "events:\n" + strings.Join(e.Node.Events(t, p), "\n") + "\n")
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		lines := e.Node.ContainerLog(t, p, c.Name)
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		b.WriteString("log of " + c.Name + ":\n")
		for _, l := range lines {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}
