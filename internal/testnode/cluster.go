package testnode

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ClusterOptions configure StartClusterWith. The zero value is the
// cluster StartCluster starts: envtest's own.
type ClusterOptions struct {
	// ServingIPs are addresses, besides the loopback, that the API
	// server's serving certificate names: where pods reach it through a
	// relay (a container node's address), so that their in-cluster config
	// verifies it. The API server still listens on the host's loopback
	// only. When set, the cluster's CA and serving certificate, and the
	// ServiceAccount signing key, are the test's instead of envtest's
	// (whose certificate names localhost and 127.0.0.1 only).
	ServingIPs []string
	// ServiceAccounts turns the ServiceAccount admission plugin on
	// (envtest turns it off): every pod gets its ServiceAccount (the
	// namespace's "default" when it names none, which must exist) and,
	// unless it opts out, the projected volume of a bound token, the
	// cluster's CA (the kube-root-ca.crt ConfigMap of its namespace) and
	// its namespace, that the kubelet fills through the TokenRequest API.
	// envtest runs no controller manager: CreateNamespace stands in for
	// its ServiceAccount controller and root CA publisher.
	ServiceAccounts bool
	// NodeEgress routes the API server's connections to the kubelets
	// (pods/log, exec, portforward) through a proxy of the test's
	// (its "cluster" egress selector, HTTP CONNECT), which connects them
	// with the dialer Cluster.DialNodesWith sets: the nodes' addresses are
	// in namespaces of their own, out of the host's reach.
	NodeEgress bool
}

// StartClusterWith is StartCluster with opts.
func StartClusterWith(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	requireNodes(t)
	WatchHost(t)
	env := &envtest.Environment{}
	if len(opts.ServingIPs) > 0 {
		servingCerts(t, env, opts.ServingIPs)
	}
	if opts.ServiceAccounts {
		env.ControlPlane.GetAPIServer().Configure().Disable("disable-admission-plugins")
	}
	var eg *egress
	if opts.NodeEgress {
		eg = startEgress(t, env)
	}
	cfg, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return &Cluster{Config: cfg, Client: c, Clientset: cs, KubeConfig: env.KubeConfig, env: env, serviceAccounts: opts.ServiceAccounts, egress: eg}
}

// servingCerts gives env's API server a CA and a serving certificate of
// the test's, for localhost, 127.0.0.1 and ips, and a ServiceAccount
// signing key. envtest keeps a serving certificate it finds in the API
// server's CertDir, and takes the CA its clients trust from
// SecureServing.CA; the signing key's flags are set explicitly, so that
// nothing depends on the names of envtest's own files.
func servingCerts(t testing.TB, env *envtest.Environment, ips []string) {
	t.Helper()
	alt := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, s := range ips {
		ip := net.ParseIP(s)
		require.NotNil(t, ip, "ClusterOptions.ServingIPs: %q is not an IP address", s)
		alt = append(alt, ip)
	}
	// The certificate, then the CA that signed it.
	chain, key, err := certutil.GenerateSelfSignedCertKey("localhost", alt, []string{"localhost"})
	require.NoError(t, err)
	certs, err := certutil.ParseCertsPEM(chain)
	require.NoError(t, err)
	require.Len(t, certs, 2, "a serving certificate and its CA")
	ca, err := certutil.EncodeCertificates(certs[1])
	require.NoError(t, err)
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	require.NoError(t, err)

	dir := t.TempDir()
	for name, b := range map[string][]byte{"apiserver.crt": chain, "apiserver.key": key, "service-account.key": saKey} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	api := env.ControlPlane.GetAPIServer()
	api.CertDir = dir
	api.SecureServing.CA = ca
	// A private key file holds the public key the tokens are verified with too.
	api.Configure().Set("service-account-key-file", filepath.Join(dir, "service-account.key")).
		Set("service-account-signing-key-file", filepath.Join(dir, "service-account.key"))
}

// RootCAConfigMap is the ConfigMap of every namespace that holds the
// cluster's CA (key ca.crt), which the projected volume of a pod's
// ServiceAccount token mounts: kube-controller-manager's root CA
// publisher writes it on a real cluster.
const RootCAConfigMap = "kube-root-ca.crt"

// namespaceDefaults creates in the namespace name what
// kube-controller-manager would put there at once, on a cluster started
// with ClusterOptions.ServiceAccounts (envtest runs no controller
// manager): its "default" ServiceAccount, which the admission plugin
// gives a pod that names none, and the RootCAConfigMap, which the pods'
// token volumes mount.
func (c *Cluster) namespaceDefaults(t testing.TB, name string) {
	t.Helper()
	if !c.serviceAccounts {
		return
	}
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: RootCAConfigMap},
			Data: map[string]string{"ca.crt": string(bytes.TrimSpace(c.Config.CAData)) + "\n"}},
	} {
		if err := c.Client.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "%T %s/%s", obj, name, obj.GetName())
		}
	}
}
