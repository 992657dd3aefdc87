// Package k8s plugs the deletion engine into controller-runtime: it reads
// pods through a client.Reader (usually the manager's cache), requeues pods
// through a channel watched by a controller's source.Channel, feeds
// Prometheus metrics from the engine's Observer hook, and wires an engine to
// a manager so that every pod bound to the node is tracked and every pod
// deletion triggers a check at once.
//
// A node agent typically scopes its manager's pod cache to its own node with
// NodeCacheOptions, builds the engine with NewPodGetter(mgr.GetCache()),
// NewPodGetter(mgr.GetAPIReader()) as its Confirmer (so that a cache that
// lags or filters pods never destroys a live pod's PU: the cache answers
// every check, the API server only the few that would destroy) and
// NewMetrics, and calls SetupWithManager; see its example.
//
// A central controller that holds a PU per pod of the whole cluster runs as
// a Deployment of several replicas instead: its manager has leader election
// on, its engine has no node and an Inventory, and SetupClusterWithManager
// runs the engine on the replica that holds the lease only
// (see its example, and examples/cluster-controller).
//
// Pods are read-only everywhere in the SDK: the engine and its ports never
// modify a pod they are given, and the pods handed to SetupOptions.Filter
// by the wiring are the informer's own objects.
package k8s
