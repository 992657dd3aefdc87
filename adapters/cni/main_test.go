package cni_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/podsweeper/podsweeper/internal/privatens"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The tests that run the real CNI plugins (bridge, host-local, loopback,
// built by `make cni-plugins` into CNI_PLUGINS_DIR) run them inside a
// private network and mount namespace, so that the host's links,
// addresses, /var/lib/cni, /run/netns and /etc/cni are never touched:
// TestMain runs the test binary again in them (internal/privatens), where
// it starts the API server and runs the tests; the parent fails the run
// if the host's state changed.

// insideEnv is set in the child that runs inside the namespaces.
const insideEnv = "PODSWEEPER_CNI_IN_NETNS"

// suite is what TestMain prepared; a test asks for it with needNode or
// needAPI.
var suite struct {
	// noNetNS says why the real-plugin tests cannot run ("" when they can).
	noNetNS string
	// plugins is the directory of the built plugins.
	plugins string
	// noAPI says why the API server is not available ("" when it is).
	noAPI  string
	cfg    *rest.Config
	client client.Client
}

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// Fuzzing (go test -fuzz, its workers too): the fuzz targets need neither the namespaces nor the API
		// server, which each worker would start anew.
		suite.noNetNS, suite.noAPI = "fuzzing", "fuzzing"
		os.Exit(m.Run())
	}
	os.Exit(privatens.Run(insideEnv, func() int { return inside(m) }, func(reason string) int {
		suite.noNetNS = reason
		return m.Run()
	}))
}

// inside finds the plugins, starts the API server, and runs the tests, in
// the private namespaces privatens.Run prepared.
func inside(m *testing.M) int {
	suite.plugins = os.Getenv("CNI_PLUGINS_DIR")
	if suite.plugins == "" {
		suite.plugins, _ = filepath.Abs("../../bin/cni")
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(suite.plugins, p)); err != nil {
			suite.noNetNS = fmt.Sprintf("no %s plugin in %s: run `make cni-plugins` (or `make test`)", p, suite.plugins)
		}
	}
	stop, err := startAPI()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver and etcd:", err)
		return 1
	}
	code := m.Run()
	stop()
	return code
}

// startAPI starts a real kube-apiserver and etcd inside the namespace,
// when KUBEBUILDER_ASSETS holds them.
func startAPI() (stop func(), err error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); assets == "" || err != nil {
			suite.noAPI = "KUBEBUILDER_ASSETS does not hold kube-apiserver and etcd: run the tests with `make test`"
			return func() {}, nil
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	// The namespace has no default route, from which kube-apiserver would
	// pick the address it advertises; a loopback one it accepts only
	// without the endpoint reconciler (the kubernetes Service's
	// endpoints, which nothing here reads).
	env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "127.0.0.1").Set("endpoint-reconciler-type", "none")
	if os.Getenv("DEBUG_ENVTEST") != "" {
		env.ControlPlane.GetAPIServer().Out = os.Stderr
		env.ControlPlane.GetAPIServer().Err = os.Stderr
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	suite.cfg, suite.client = cfg, c
	return func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}, nil
}

// needNetNS skips t when the real plugins cannot run in a private
// namespace, and fails it instead under CI=true.
func needNetNS(tb testing.TB) {
	tb.Helper()
	if suite.noNetNS == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal(suite.noNetNS)
	}
	tb.Skip(suite.noNetNS)
}

// needAPI is needNetNS, and the API server too.
func needAPI(tb testing.TB) {
	tb.Helper()
	needNetNS(tb)
	if suite.noAPI == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal(suite.noAPI)
	}
	tb.Skip(suite.noAPI)
}
