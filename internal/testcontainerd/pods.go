package testcontainerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunTimeout bounds WaitRunning: a pod with the local image is Running
// about 1 s after it is created.
const RunTimeout = 60 * time.Second

// RunPod creates pod and waits for it to be Running with an address;
// it returns the pod as the API server has it then.
func (n *Node) RunPod(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	require.NoError(t, n.cluster.Client.Create(context.Background(), pod))
	return n.WaitRunning(t, pod)
}

// WaitRunning waits for pod to be Running with its containers ready and
// an address, and returns it as the API server has it then.
func (n *Node) WaitRunning(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(RunTimeout)
	for {
		p := &corev1.Pod{}
		err := n.cluster.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), p)
		if err == nil && Running(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not Running after %v (%v): %+v\nevents:\n%s", pod.Namespace, pod.Name, RunTimeout, err,
				p.Status, strings.Join(n.Events(t, p), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Running reports whether p runs with every container ready and an address.
func Running(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.ContainersReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Events returns the events of pod, "reason: message" each, oldest first.
func (n *Node) Events(t testing.TB, pod *corev1.Pod) []string {
	t.Helper()
	list, err := n.cluster.Clientset.CoreV1().Events(pod.Namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod.Name).String(),
	})
	require.NoError(t, err)
	var out []string
	for _, e := range list.Items {
		if pod.UID != "" && e.InvolvedObject.UID != "" && e.InvolvedObject.UID != pod.UID {
			continue
		}
		for range max(e.Count, 1) {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// CacheEntry is what libcni cached of one attachment: the fields a test
// reads.
type CacheEntry struct {
	ContainerID string      `json:"containerId"`
	IfName      string      `json:"ifName"`
	NetworkName string      `json:"networkName"`
	NetNS       string      `json:"netns"`
	CniArgs     [][2]string `json:"cniArgs"`
}

// Arg returns the CNI_ARGS value of key; "" when there is none.
func (e CacheEntry) Arg(key string) string {
	for _, kv := range e.CniArgs {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

// CacheEntries returns libcni's cache of the node: every attachment
// containerd's ADDs left, by file name, but one being written.
func (n *Node) CacheEntries(t testing.TB) map[string]CacheEntry {
	t.Helper()
	dir := filepath.Join(n.CNICacheDir, "results")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]CacheEntry{}
	}
	require.NoError(t, err)
	out := map[string]CacheEntry{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		var c CacheEntry
		if err := json.Unmarshal(b, &c); err != nil {
			// libcni writes an entry in place (os.WriteFile): one written
			// this moment may be read half done. Left out; an older one fails.
			if info, serr := e.Info(); serr == nil && time.Since(info.ModTime()) < 2*time.Second {
				continue
			}
			require.NoError(t, err, "cache entry %s", e.Name())
		}
		out[e.Name()] = c
	}
	return out
}

// Addresses returns the addresses host-local holds in the node's network,
// each with the sandbox ID it holds it for.
func (n *Node) Addresses(t testing.TB) map[string]string {
	t.Helper()
	dir := filepath.Join(n.CNICacheDir, "networks", n.Network)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}
	}
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "last_reserved_ip") || e.Name() == "lock" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		id, _, _ := strings.Cut(string(b), "\n")
		out[e.Name()] = strings.TrimSpace(id)
	}
	return out
}

// NetNS returns the network namespace path (inside the node) that libcni
// cached for the sandbox's eth0; "" when nothing is cached for it.
func (n *Node) NetNS(t testing.TB, sandboxID string) string {
	t.Helper()
	for _, e := range n.CacheEntries(t) {
		if e.ContainerID == sandboxID && e.IfName == "eth0" {
			return e.NetNS
		}
	}
	return ""
}

// PodInterface returns `ip -o addr show eth0` in the network namespace at
// netns (a path inside the node), or an error when the namespace or its
// eth0 is gone.
func (n *Node) PodInterface(netns string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := n.Command(ctx, "nsenter", "--net="+netns, "ip", "-o", "-4", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("eth0 in %s: %w: %s", netns, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// KillSandbox SIGKILLs the pause process of the pod's ready sandbox, as
// when it dies: containerd sees its task exit and reports the sandbox
// NotReady, and the kubelet makes the next one. It returns the sandbox's ID.
func (n *Node) KillSandbox(t testing.TB, pod *corev1.Pod) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := n.ReadySandbox(ctx, string(pod.UID))
	require.NoError(t, err)
	require.NotEmpty(t, id, "pod %s/%s has no ready sandbox", pod.Namespace, pod.Name)
	n.Run(t, "kill", "-KILL", strconv.Itoa(n.SandboxPID(t, id)))
	return id
}

// WaitNewSandbox waits for the kubelet to make a ready sandbox of pod
// other than old, and returns its ID.
func (n *Node) WaitNewSandbox(t testing.TB, pod *corev1.Pod, old string) string {
	t.Helper()
	deadline := time.Now().Add(RunTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		id, err := n.ReadySandbox(ctx, string(pod.UID))
		cancel()
		if err == nil && id != "" && id != old {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new sandbox of pod %s/%s after %v (%v)", pod.Namespace, pod.Name, RunTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
