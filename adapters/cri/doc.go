// Package cri reports the sandbox a pod runs in by asking the node's container
// runtime over the CRI (gRPC on a unix socket), so that the deletion engine
// sees a sandbox restart of a live pod (row 10 of the decision table): the
// Kubernetes API does not carry the sandbox ID, the runtime does.
//
// A SandboxExtractor asks ListPodSandbox for the pod's READY sandboxes,
// selected by the label io.kubernetes.pod.uid that the kubelet puts on every
// sandbox it creates, as the kubelet's own sandbox GC and the CNI plugins
// that track sandboxes do. When several are ready (a restart in progress) it
// answers the one of the highest attempt, then the newest. No ready sandbox
// is "" and a nil error (not known yet: the engine keeps the PU); a runtime
// that cannot be reached, answers an error or is slower than Options.Timeout
// is an error, never "" (the engine keeps the PU and asks again).
//
// New connects lazily: it never waits for the runtime, so an agent starts
// while the runtime is still coming up, and each SandboxID call fails fast
// until it answers. That is why it builds its own gRPC client
// (grpc.NewClient with the cri-api v1 RuntimeServiceClient) instead of
// cri-client's remote.NewRemoteRuntimeService: in v0.37.2 that one checks
// the runtime's Version before returning, so it fails at once when the
// socket is missing and blocks up to its connection timeout on a runtime
// that does not answer; it also logs every failed call through klog and
// installs an OpenTelemetry handler on every call. The endpoint is parsed
// and dialed by cri-client's util package, as the kubelet does.
//
// Ping serves a readiness check (is the runtime answering?), and SocketPath
// tells an agent where the socket should be, so that it can tell a node
// without that runtime from a runtime that is down.
//
// Give the SandboxExtractor to the engine (deletion.Options.SandboxExtractor),
// the only place it is given: the informer wiring, adapters/k8s.SetupWithManager,
// never calls it, and leaves it to the engine's checks, which are bounded
// in goroutines and time. Close it when the agent stops. examples/node-agent shows the whole path.
package cri
