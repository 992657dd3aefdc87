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
// NewMetrics, and calls SetupWithManager; see its example. NewEvents adds
// a Kubernetes Event for each destroy, on the pod or its Node, for kubectl
// describe and kubectl get events.
//
// Where podsweeper is the only reader of pods in its manager's cache, that
// cache can keep slim pods (SlimPodCacheOptions, with NodeCacheOptions or
// cluster-wide): a realistic pod holds about 1.5 KB of heap instead of
// about 31 KB, and a check reads it without a deep copy. Every other reader
// of that cache sees the same slim pods; an agent whose other controllers
// need full pods gives podsweeper a slim cache of its own
// (SetupOptions.Cache) or keeps the fields they read (the SlimPod example).
//
// A central controller that holds a PU per pod of the whole cluster runs as
// a Deployment of several replicas instead: its manager has leader election
// on, its engine has no node and an Inventory, and SetupClusterWithManager
// runs the engine on the replica that holds the lease only
// (see its example, and examples/cluster-controller). With a LeaseFence as
// the manager's lock (SetupOptions.LeaseFence), the leader's engine stops
// before another replica can take the Lease, whatever the leader
// election's client is waiting for.
//
// NewLogger is controller-runtime's zap logger whose sampling never drops
// the lines that record what became of a PU (EngineRecordMessages): in a
// drain, the production logger would write about half of them.
//
// Pods are read-only everywhere in the SDK: the engine and its ports never
// modify a pod they are given, and the pods handed to SetupOptions.Filter
// by the wiring are the informer's own objects, as are those a slim cache's
// reads return. The Requeuer alone gets a copy of its own.
package k8s
