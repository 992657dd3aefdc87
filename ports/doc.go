// Package ports holds the interfaces through which the deletion engine meets
// the outside world, and the values that cross them.
//
// The engine (package deletion) depends on nothing else: a PodGetter reads the
// live pod, a SandboxExtractor reports the sandbox a pod runs in, a
// SandboxProber says whether a sandbox is dead, a PolicyHandler destroys a
// processing unit (PU), a Requeuer asks the main pod controller to look at a
// pod again, and an Inventory lists the PUs that survived a restart of the
// agent. Adapters for controller-runtime and
// trireme-lib live under adapters/; generated mocks of every port live in mocks/.
//
// Each port has a func adapter (PolicyHandlerFunc, SandboxExtractorFunc,
// SandboxProberFunc, RequeuerFunc, PodGetterFunc, InventoryFunc), so a plain function can
// serve as a port, as http.HandlerFunc does for http.Handler.
//
// Ports are called from several goroutines at once and must be safe for that.
// They receive pods read-only: an implementation must not modify a pod it is
// given, and the engine never modifies a pod a PodGetter returns.
package ports
