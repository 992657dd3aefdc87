package cni_test

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// nodeName is the node every test pod is bound to, and the engines' node.
const nodeName = "node-1"

// hostPorts numbers the sandboxes' host ports, from 20001.
var hostPorts atomic.Int32

// nodes numbers the test nodes, so that bridges, subnets and directories
// of two tests never meet.
var nodes atomic.Int32

// network is one network of a node, as a runtime's conflist has it.
type network struct {
	name, ifName string
	// bridge and subnet are the bridge plugin's; "" for loopback.
	bridge, subnet string
	disableGC      bool
	// ipMasq turns the bridge plugin's ipMasq on, and portMap chains the
	// portmap plugin after it with a port of the sandbox's: both call
	// iptables on ADD and DEL (ipmasq_test.go).
	ipMasq, portMap bool
}

// node is one test's node inside the private namespace: a plugin
// directory of wrappers around the real plugins (each call logged, DEL
// made to fail while failFile exists), libcni's cache, host-local's data,
// the networks every sandbox is attached to (containerd's loopback first),
// and the runtime's libcni that ADDs them.
type node struct {
	t                                  testing.TB
	id                                 int32
	cacheDir, confDir, pluginDir, data string
	callLog, failFile                  string
	nets                               []network
	cni                                *libcni.CNIConfig
}

// newNode makes a node whose sandboxes are attached to the loopback and
// to one bridge network "podnet" (eth0), and to more networks for each
// extra one given (net1, net2, ... as Multus names them).
func newNode(tb testing.TB, extra ...network) *node {
	tb.Helper()
	needNetNS(tb)
	id := nodes.Add(1)
	root := filepath.Join("/var/lib/cni-test", fmt.Sprint(id))
	n := &node{
		t: tb, id: id,
		cacheDir:  filepath.Join(root, "cache"),
		confDir:   filepath.Join(root, "net.d"),
		pluginDir: filepath.Join(root, "bin"),
		data:      filepath.Join(root, "networks"),
		callLog:   filepath.Join(root, "calls.log"),
		failFile:  filepath.Join(root, "fail-del"),
	}
	for _, d := range []string{n.cacheDir, n.confDir, n.pluginDir, n.data} {
		require.NoError(tb, os.MkdirAll(d, 0o755))
	}
	tb.Cleanup(func() { _ = os.RemoveAll(root) })
	n.nets = append(n.nets, network{name: "cni-loopback", ifName: "lo"},
		network{name: "podnet", ifName: "eth0", bridge: fmt.Sprintf("psw%d", id), subnet: fmt.Sprintf("10.%d.0.0/16", 100+id)})
	for i, x := range extra {
		x.ifName = fmt.Sprintf("net%d", i+1)
		x.bridge = fmt.Sprintf("psw%d-%d", id, i+1)
		x.subnet = fmt.Sprintf("10.%d.%d.0/24", 100+id, i+1)
		n.nets = append(n.nets, x)
	}
	// The bridge plugin is a wrapper that logs each call and fails DEL on
	// demand; bridge runs host-local (its IPAM) from the same directory.
	wrapper := fmt.Sprintf(`#!/bin/sh
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME netns=$CNI_NETNS" >> %s
if [ "$CNI_COMMAND" = DEL ] && [ -e %s ]; then
	echo '{"cniVersion":"1.1.0","code":999,"msg":"DEL fails on purpose"}'
	exit 1
fi
exec %s "$@"
`, n.callLog, n.failFile, filepath.Join(suite.plugins, "bridge"))
	require.NoError(tb, os.WriteFile(filepath.Join(n.pluginDir, "bridge"), []byte(wrapper), 0o755))
	// The loopback plugin's calls are logged too, so that every DEL is counted.
	loopback := fmt.Sprintf("#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME netns=$CNI_NETNS\" >> %s\nexec %s \"$@\"\n",
		n.callLog, filepath.Join(suite.plugins, "loopback"))
	require.NoError(tb, os.WriteFile(filepath.Join(n.pluginDir, "loopback"), []byte(loopback), 0o755))
	require.NoError(tb, os.Symlink(filepath.Join(suite.plugins, "host-local"), filepath.Join(n.pluginDir, "host-local")))
	require.NoError(tb, os.Symlink(filepath.Join(suite.plugins, "portmap"), filepath.Join(n.pluginDir, "portmap")))
	n.cni = libcni.NewCNIConfigWithCacheDir([]string{n.pluginDir}, n.cacheDir, nil)
	return n
}

// conflist returns the config of net as a runtime would find it in
// /etc/cni/net.d.
func (n *node) conflist(net network) []byte {
	plugin := `{"type":"loopback"}`
	if net.bridge != "" {
		plugin = fmt.Sprintf(`{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":%t,"ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"dataDir":%q}}`,
			net.bridge, net.ipMasq, net.subnet, n.data)
		if net.portMap {
			plugin += `,{"type":"portmap","capabilities":{"portMappings":true}}`
		}
	}
	return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q,"disableGC":%t,"plugins":[%s]}`, net.name, net.disableGC, plugin)
}

// pod is a pod as the runtime names it in CNI_ARGS.
type pod struct {
	Namespace, Name, UID string
}

func (p pod) key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// sandbox is a sandbox the runtime attached to every network of its node.
type sandbox struct {
	ID    string
	Pod   pod
	NetNS string
	// Veths are the host-side veths its ADDs created, one per bridge network.
	Veths []string
	// HostPort is the node's port that portmap forwards to the sandbox's
	// port 80, on a network with portMap.
	HostPort int
}

// add creates a sandbox of p, with a network namespace of its own, and
// ADDs it to every network of n through libcni, as containerd does.
func (n *node) add(p pod) *sandbox {
	n.t.Helper()
	id := randomID()
	return n.addIn(p, id, newNetNS(n.t, "/run/netns/cni-"+id[:16]))
}

// addIn is add with the sandbox's ID and network namespace given.
func (n *node) addIn(p pod, id, netns string) *sandbox {
	n.t.Helper()
	sb := &sandbox{ID: id, Pod: p, NetNS: netns, HostPort: 20000 + int(hostPorts.Add(1))}
	before := links(n.t)
	for _, net := range n.nets {
		list, err := libcni.NetworkConfFromBytes(n.conflist(net))
		require.NoError(n.t, err)
		_, err = n.cni.AddNetworkList(context.Background(), list, runtimeConf(sb, net))
		require.NoError(n.t, err, "ADD of %s to network %s", sb.ID, net.name)
	}
	for _, l := range links(n.t) {
		if !slices.Contains(before, l) && strings.HasPrefix(l, "veth") {
			sb.Veths = append(sb.Veths, l)
		}
	}
	require.Len(n.t, sb.Veths, len(n.nets)-1, "one veth per bridge network")
	return sb
}

// runtimeConf is what containerd passes for sb on net.
func runtimeConf(sb *sandbox, net network) *libcni.RuntimeConf {
	var capabilities map[string]any
	if net.portMap {
		capabilities = map[string]any{"portMappings": []map[string]any{{"hostPort": sb.HostPort, "containerPort": 80, "protocol": "tcp"}}}
	}
	return &libcni.RuntimeConf{
		CapabilityArgs: capabilities,
		ContainerID:    sb.ID,
		NetNS:          sb.NetNS,
		IfName:         net.ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", sb.Pod.Namespace},
			{"K8S_POD_NAME", sb.Pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", sb.ID},
			{"K8S_POD_UID", sb.Pod.UID},
		},
	}
}

// removeNetNS removes the sandbox's network namespace, as the runtime
// does when it removes the sandbox, and waits for the kernel to destroy
// its veths (it cleans up a namespace asynchronously: on a loaded 2-core
// machine that has taken more than 10 s).
func (n *node) removeNetNS(sb *sandbox) {
	n.t.Helper()
	require.NoError(n.t, unix.Unmount(sb.NetNS, unix.MNT_DETACH))
	require.NoError(n.t, os.Remove(sb.NetNS))
	eventually(n.t, 60*time.Second, func() bool { return len(n.veths(sb)) == 0 }, "the veths of %s gone with its namespace", sb.ID)
}

// cached returns sb's entries in libcni's cache.
func (n *node) cached(sb *sandbox) []string {
	entries, err := os.ReadDir(filepath.Join(n.cacheDir, "results"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(n.t, err)
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), "-"+sb.ID+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// addresses returns the host-local files that hold an address for sb.
func (n *node) addresses(sb *sandbox) []string {
	var out []string
	for _, net := range n.nets {
		dir := filepath.Join(n.data, net.name)
		entries, err := os.ReadDir(dir)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(n.t, err)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if os.IsNotExist(err) {
				continue // freed between the listing and the read
			}
			require.NoError(n.t, err)
			if first, _, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(first) == sb.ID {
				out = append(out, net.name+"/"+e.Name())
			}
		}
	}
	return out
}

// veths returns those of sb's host-side veths that still exist.
func (n *node) veths(sb *sandbox) []string {
	var out []string
	all := links(n.t)
	for _, v := range sb.Veths {
		if slices.Contains(all, v) {
			out = append(out, v)
		}
	}
	return out
}

// dels counts the DELs the plugins were called with for sb, on every
// interface.
func (n *node) dels(sb *sandbox) int { return n.delsOn(sb, "") }

// delsOn counts the DELs the plugins were called with for sb's interface
// ifName ("": every interface).
func (n *node) delsOn(sb *sandbox, ifName string) int {
	f, err := os.Open(n.callLog)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(n.t, err)
	defer f.Close()
	count := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) >= 3 && f[0] == "DEL" && f[1] == sb.ID && (ifName == "" || f[2] == ifName) {
			count++
		}
	}
	return count
}

// freed reports whether nothing of sb is left: no cache entry, no
// address, no veth.
func (n *node) freed(sb *sandbox) bool {
	return len(n.cached(sb)) == 0 && len(n.addresses(sb)) == 0 && len(n.veths(sb)) == 0
}

// requireFreed fails unless nothing of sb is left, and each of its
// attachments was DELed once.
func (n *node) requireFreed(sb *sandbox) {
	n.t.Helper()
	require.Empty(n.t, n.cached(sb), "cache entries of %s", sb.ID)
	require.Empty(n.t, n.addresses(sb), "addresses of %s", sb.ID)
	require.Empty(n.t, n.veths(sb), "veths of %s", sb.ID)
	for _, net := range n.nets {
		require.Equal(n.t, 1, n.delsOn(sb, net.ifName), "DELs of %s on %s", sb.ID, net.ifName)
	}
}

// requireIntact fails unless every attachment of sb is there and no DEL
// ever ran for it.
func (n *node) requireIntact(sb *sandbox) {
	n.t.Helper()
	require.Len(n.t, n.cached(sb), len(n.nets), "cache entries of %s", sb.ID)
	require.Len(n.t, n.addresses(sb), len(n.nets)-1, "addresses of %s", sb.ID)
	require.Equal(n.t, sb.Veths, n.veths(sb), "veths of %s", sb.ID)
	require.Zero(n.t, n.dels(sb), "DELs of %s", sb.ID)
}

// links returns the names of the links of the test's network namespace.
func links(tb testing.TB) []string {
	ifs, err := net.Interfaces()
	require.NoError(tb, err)
	var out []string
	for _, i := range ifs {
		out = append(out, i.Name)
	}
	return out
}

// newNetNS makes a network namespace and bind-mounts it at path, as a
// runtime does for a sandbox.
func newNetNS(tb testing.TB, path string) string {
	tb.Helper()
	f, err := os.Create(path)
	require.NoError(tb, err)
	require.NoError(tb, f.Close())
	errc := make(chan error, 1)
	go func() {
		// The thread moves to the new namespace, pins it with the bind
		// mount, and moves back: left there, it would hold the namespace
		// until it ends, which the Go runtime never does for the main
		// thread (it parks it), so that a namespace unmounted and removed
		// was not destroyed, nor its veths. A thread that cannot move back
		// stays locked, and ends with the goroutine.
		runtime.LockOSThread()
		back, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(back)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		err = unix.Mount(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()), path, "", unix.MS_BIND, "")
		if serr := unix.Setns(back, unix.CLONE_NEWNET); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("setns back: %w", serr))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	require.NoError(tb, <-errc)
	tb.Cleanup(func() {
		_ = unix.Unmount(path, unix.MNT_DETACH)
		_ = os.Remove(path)
	})
	return path
}

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createPod creates a pod bound to nodeName on the API server, in the
// node's own namespace, and returns it with its UID.
func (n *node) createPod(name string) pod {
	n.t.Helper()
	return n.createPodWith(name, nil)
}

func (n *node) createPodWith(name string, annotations map[string]string) pod {
	tb := n.t
	tb.Helper()
	namespace := fmt.Sprintf("node-%d", n.id)
	ctx := context.Background()
	err := suite.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(tb, err)
	}
	no := false
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			NodeName:                     nodeName,
			AutomountServiceAccountToken: &no,
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	require.NoError(tb, suite.client.Create(ctx, p))
	return pod{Namespace: namespace, Name: name, UID: string(p.UID)}
}

// createMirrorPod creates the mirror pod of a static pod that the kubelet
// runs under uid, as the kubelet does, and returns the static pod.
func (n *node) createMirrorPod(name, uid string) pod {
	tb := n.t
	tb.Helper()
	p := n.createPodWith(name, map[string]string{corev1.MirrorPodAnnotationKey: uid})
	require.NotEqual(tb, uid, p.UID, "the mirror pod has a UID of its own")
	p.UID = uid
	return p
}

// deletePod deletes p at once (grace period 0), without any DEL: what a
// runtime whose teardown failed leaves behind.
func deletePod(tb testing.TB, p pod) {
	tb.Helper()
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	require.NoError(tb, suite.client.Delete(context.Background(), obj, client.GracePeriodSeconds(0)))
	eventually(tb, 10*time.Second, func() bool {
		err := suite.client.Get(context.Background(), p.key(), &corev1.Pod{})
		return apierrors.IsNotFound(err)
	}, "pod %s deleted", p.key())
}

// eventually waits until cond holds, checking every 10ms, and fails tb
// when it does not within timeout.
func eventually(tb testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: "+msg, append([]any{timeout}, args...)...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// currentSandboxes is a SandboxExtractor that reports what the test says
// is each pod's current (ready) sandbox, as the CRI one (adapters/cri)
// reports the runtime's; "" for a pod without one yet.
//
// It is the collector's cni.Runtime too: it lists each pod's current
// sandbox ready, created when set was told of it, and the sandboxes
// stopped says were stopped, not ready.
type currentSandboxes struct {
	mu      sync.Mutex
	ids     map[string]string
	created map[string]time.Time
	stopped map[string]string // sandbox ID → pod UID
}

func (c *currentSandboxes) set(p pod, sb *sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids, c.created = map[string]string{}, map[string]time.Time{}
	}
	c.ids[p.UID] = ""
	if sb != nil {
		c.ids[p.UID] = sb.ID
		c.created[sb.ID] = time.Now()
	}
}

// stop makes the runtime list sb stopped, and p without a current sandbox.
func (c *currentSandboxes) stop(p pod, sb *sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped == nil {
		c.stopped = map[string]string{}
	}
	c.stopped[sb.ID] = p.UID
	if c.ids[p.UID] == sb.ID {
		c.ids[p.UID] = ""
	}
}

func (c *currentSandboxes) ListPodSandbox(_ context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	want := f.GetLabelSelector()["io.kubernetes.pod.uid"]
	var out []*runtimeapi.PodSandbox
	add := func(id, uid string, state runtimeapi.PodSandboxState) {
		if want == "" || want == uid {
			out = append(out, &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: c.created[id].UnixNano(),
				Labels: map[string]string{"io.kubernetes.pod.uid": uid}})
		}
	}
	for uid, id := range c.ids {
		if id != "" {
			add(id, uid, runtimeapi.PodSandboxState_SANDBOX_READY)
		}
	}
	for id, uid := range c.stopped {
		add(id, uid, runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
	}
	return out, nil
}

func (c *currentSandboxes) SandboxID(_ context.Context, p *corev1.Pod) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[string(p.UID)], nil
}

// agent is the collector's wiring as examples/cni-gc has it: an engine
// whose Inventory, PolicyHandler and Requeuer are the Collector, whose
// destroys are confirmed by a direct read of the API server, and a
// Resync feeding it.
type agent struct {
	engine    *deletion.Engine
	collector *cni.Collector
	events    *events
	stop      func()
}

// agentOptions change the agent of a test.
type agentOptions struct {
	// getter is the engine's PodGetter. nil: the API server.
	getter ports.PodGetter
	// sandboxes is the SandboxExtractor. nil: none.
	sandboxes *currentSandboxes
	// events records the engine's events. nil: a new record.
	events *events
	// sweepInterval is the engine's. 0: 100ms.
	sweepInterval time.Duration
	// quiet drops the logs (benchmarks).
	quiet bool
	// runtime is the collector's Runtime. nil: none.
	runtime cni.Runtime
	// newestTimeout is the collector's NewestSandboxTimeout. 0: its default.
	newestTimeout time.Duration
}

// startAgent starts an agent for n, stopped when the test ends.
func (n *node) startAgent(o agentOptions) *agent {
	n.t.Helper()
	log := testr.NewWithInterface(n.t, testr.Options{})
	if o.quiet {
		log = funcr.New(func(string, string) {}, funcr.Options{})
	}
	coll, err := cni.New(cni.Options{
		CacheDir: n.cacheDir, PluginDirs: []string{n.pluginDir}, ConfDir: n.confDir,
		ResyncInterval: 200 * time.Millisecond, Logger: log, Runtime: o.runtime, NewestSandboxTimeout: o.newestTimeout,
	})
	require.NoError(n.t, err)
	// As examples/cni-gc: a mirror pod reads as the static pod it stands for.
	api := k8s.StaticPodUIDs(k8s.NewPodGetter(suite.client))
	getter := o.getter
	if getter == nil {
		getter = api
	}
	if o.events == nil {
		o.events = &events{}
	}
	opts := deletion.Options{
		NodeName:      nodeName,
		Inventory:     coll,
		Requeuer:      coll,
		Confirmer:     api,
		RetryMinDelay: 20 * time.Millisecond,
		RetryMaxDelay: 320 * time.Millisecond,
		Observer:      o.events,
		Logger:        log,
		SweepInterval: cmp.Or(o.sweepInterval, 100*time.Millisecond),
	}
	if o.sandboxes != nil {
		opts.SandboxExtractor = o.sandboxes
	}
	engine, err := deletion.New(getter, coll, opts)
	require.NoError(n.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = engine.Start(ctx) })
	wg.Go(func() { _ = coll.Resync(ctx, engine) })
	a := &agent{engine: engine, collector: coll, events: o.events}
	var once sync.Once
	a.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	n.t.Cleanup(a.stop)
	return a
}

// events records the engine's events, each with when it was told.
type events struct {
	mu  sync.Mutex
	all []deletion.Event
	at  []time.Time
}

func (e *events) Observe(ev deletion.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all, e.at = append(e.all, ev), append(e.at, time.Now())
}

// retryWaits returns, for each failed destroy of p's PU, the wait from
// when it was told to its next attempt (Event.Next): the retry's backoff,
// less the Observer's delay, whatever the DELs took.
func (e *events) retryWaits(p pod) []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []time.Duration
	for i, ev := range e.all {
		if ev.Kind == deletion.EventDestroyFailed && ev.PU.PUID == p.UID {
			out = append(out, ev.Next.Sub(e.at[i]))
		}
	}
	return out
}

// count returns how many events of kind the PU of p had.
func (e *events) count(kind deletion.EventKind, p pod) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Kind == kind && ev.PU.PUID == p.UID {
			n++
		}
	}
	return n
}

// destroyed waits for the EventDestroyed of p's PU and returns the first: the
// engine tells it once DestroyPU has returned, after the DELs removed the
// entries a test may have waited for.
func (e *events) destroyed(tb testing.TB, p pod) deletion.Event {
	tb.Helper()
	eventually(tb, freeTimeout, func() bool { return len(e.of(deletion.EventDestroyed, p)) > 0 }, "the destroy of pod %s told", p.Name)
	return e.of(deletion.EventDestroyed, p)[0]
}

// of returns the events of kind the PU of p had.
func (e *events) of(kind deletion.EventKind, p pod) []deletion.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []deletion.Event
	for _, ev := range e.all {
		if ev.Kind == kind && ev.PU.PUID == p.UID {
			out = append(out, ev)
		}
	}
	return out
}
