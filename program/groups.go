package program

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// DefaultCRIEndpoint is containerd's socket, as the kubelet's
// --container-runtime-endpoint names it: NodeFlags.CRIEndpoint's default.
const DefaultCRIEndpoint = "unix:///run/containerd/containerd.sock"

// NodeFlags are the flags of a program that runs on each node, beside
// Flags: the node and its container runtime.
type NodeFlags struct {
	// Node is --node, the node the program runs on (required); by default
	// $NODE_NAME, which a DaemonSet sets from the downward API.
	Node string
	// CRIEndpoint is --cri-endpoint, the container runtime's CRI socket;
	// DefaultCRIEndpoint by default. "" is taken: a program that cannot
	// run without the runtime refuses it itself.
	CRIEndpoint string
}

// Bind registers --node and --cri-endpoint on fs; getenv gives --node's
// default ($NODE_NAME), and criUse, appended to --cri-endpoint's help,
// says what the program asks the runtime.
func (n *NodeFlags) Bind(fs *flag.FlagSet, getenv func(string) string, criUse string) {
	fs.StringVar(&n.Node, "node", getenv("NODE_NAME"), "the node this program runs on (default $NODE_NAME)")
	fs.StringVar(&n.CRIEndpoint, "cri-endpoint", DefaultCRIEndpoint,
		"the container runtime's CRI socket, as the kubelet's --container-runtime-endpoint: "+criUse)
}

// Validate refuses a missing --node and a malformed --cri-endpoint (not a
// unix:// endpoint with a socket path), with an error that wraps ErrUsage.
// Whether a socket is there is not asked here: Runtime says what a program
// without one does.
func (n *NodeFlags) Validate() error {
	if n.Node == "" {
		return fmt.Errorf("%w: --node is required (or set NODE_NAME)", ErrUsage)
	}
	if errs := validation.IsDNS1123Subdomain(n.Node); len(errs) > 0 {
		return fmt.Errorf("%w: --node %q is no node's name: %s", ErrUsage, n.Node, strings.Join(errs, "; "))
	}
	if n.CRIEndpoint == "" {
		return nil
	}
	if _, err := cri.SocketPath(n.CRIEndpoint); err != nil {
		return fmt.Errorf("%w: --cri-endpoint: %w", ErrUsage, err)
	}
	return nil
}

// PodCacheFlags are the flags of the manager's pod cache, beside Flags.
type PodCacheFlags struct {
	// Slim is --slim-pod-cache, true by default: the cache keeps only what
	// podsweeper reads of each pod, read without deep copies
	// (k8s.SlimPodCacheOptions).
	Slim bool
}

// Bind registers --slim-pod-cache on fs, true by default.
func (c *PodCacheFlags) Bind(fs *flag.FlagSet) {
	fs.BoolVar(&c.Slim, "slim-pod-cache", true,
		"keep only what podsweeper reads of each pod in the cache, read without deep copies (k8s.SlimPodCacheOptions); "+
			"false keeps whole pods (about 20 times the heap), for code of your own that reads them from this cache")
}

// Options returns the pod cache's options (Options.Cache): slim with
// --slim-pod-cache, controller-runtime's defaults without.
func (c PodCacheFlags) Options() cache.Options {
	if c.Slim {
		return k8s.SlimPodCacheOptions(cache.Options{})
	}
	return cache.Options{}
}

// Runtime returns the container runtime on --cri-endpoint and the
// readiness check that reports on it (nil when there is nothing to
// report). Without --cri-endpoint, the program runs without the runtime,
// as asked, and adds no readiness check. With one and no socket there, it
// runs without the runtime too: it says so once in the log, and readiness
// fails with the reason, for no sandbox restart is seen; asking a runtime
// that is not there would only fail every check and fill the log. With
// the socket, readiness fails while the runtime does not answer.
func (n NodeFlags) Runtime(log logr.Logger) (*cri.SandboxExtractor, healthz.Checker, error) {
	if n.CRIEndpoint == "" {
		log.Info("no --cri-endpoint: sandbox restarts are not detected")
		return nil, nil, nil
	}
	path, err := cri.SocketPath(n.CRIEndpoint)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(path); err != nil {
		log.Error(err, "no container runtime socket: running without it, sandbox restarts are not detected", "criEndpoint", n.CRIEndpoint)
		notDetected := fmt.Errorf("no container runtime socket at %s (%w): sandbox restarts are not detected", path, err)
		return nil, func(*http.Request) error { return notDetected }, nil
	}
	x, err := cri.New(n.CRIEndpoint, cri.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to --cri-endpoint: %w", err)
	}
	return x, func(req *http.Request) error { return x.Ping(req.Context()) }, nil
}
