// Package testdeploy runs the deployable programs of examples/ where they
// would run: on a real containerd node (internal/testcontainerd), from
// their images and their charts, as an operator installs them. Each
// program's image (`make images`, bin/images/<name>.oci.tar) is imported
// into the node's containerd with ctr, inside the node's namespaces; its
// chart is rendered by helm v4.3.1 (internal/testkube) with values that
// name the imported image by its digest; every object of the render is
// created through the API server; and the kubelet runs the program's pods
// with their ServiceAccount tokens, RBAC, hostPath mounts and probes.
//
// What a real cluster has and the tests' does not, and what stands in:
//
//   - No kube-proxy, so no Service address reaches the API server. The
//     charts' kubeAPI.host and kubeAPI.port values set
//     KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which client-go's
//     in-cluster config reads, to the node's address and the API server's
//     port: the node relays that address to the API server
//     (testcontainerd.Node.APIServerAddr), and the API server's certificate
//     names it (testnode.ClusterOptions.ServingIPs).
//   - The API server cannot reach the node's kubelet, whose address is in
//     the node's namespaces: Start routes its connections to the kubelet
//     (pods/log, exec, pods/portforward) through a proxy of the test's
//     (testnode.ClusterOptions.NodeEgress, the API server's "cluster"
//     egress selector), which dials the kubelet on the node's loopback.
//   - ServiceAccount tokens: envtest turns the ServiceAccount admission
//     plugin off; Start turns it on (testnode.ClusterOptions.ServiceAccounts),
//     and nothing else: envtest's API server signs tokens already. The
//     plugin gives each pod the projected volume of a bound token, which
//     the kubelet requests through the TokenRequest API, beside the
//     cluster's CA and the namespace. envtest runs no controller manager:
//     testnode's CreateNamespace writes what its ServiceAccount controller
//     and root CA publisher would (the default ServiceAccount, the
//     kube-root-ca.crt ConfigMap).
//   - No DaemonSet or Deployment controller and no scheduler: RunDaemonSet
//     and RunDeployment make the pods of the rendered template as those
//     controllers do (the template's labels and spec, the DaemonSet's node
//     affinity and tolerations, its owner reference), check that the node
//     is one the template may run on (node selector, taints), and bind
//     them to the node through the binding subresource, as the scheduler
//     does; the kubelet does the rest.
//   - No node lifecycle controller: Start takes the not-ready taint, which
//     the API server's admission puts on a node it registers, off the
//     node once it is Ready, as that controller would.
//   - No PersistentVolume controller: BindClaim binds a claim to a hostPath
//     volume on the node as it would.
//
// Tests that use it are skipped without root and the binaries (`make
// test` builds them), and fail under CI=true. It is for tests only: it
// calls t.Fatal, t.Skip and t.Cleanup.
package testdeploy
