// Package deletion is the core of podsweeper: it decides when the processing
// unit (PU) a node agent created for a pod must be destroyed, and destroys it
// once the pod is really gone, without a finalizer on the pod.
//
// Decide holds the whole decision table as a pure function, and Classify
// asks it how a pod reads on its own, for adapters choosing what to track.
// Engine runs the table: Track remembers a PU, Start re-checks every PU about
// every SweepInterval and at once after TriggerPod or TriggerAll, with
// bounded concurrency, per-PU exclusivity, deadlines, retries with backoff
// that hold whatever brings a PU up, and recovery from ports that fail, hang
// or panic; a Confirmer reads the live API before any destroy a cache
// decided, and an Inventory restores the PUs of a previous run. Untrack
// forgets a PU, Status says why each one is kept, LivenessCheck and ReadinessCheck serve a
// manager's /healthz. Sweep runs one pass over every PU through the same
// queue and waits for it, for tests and for callers that schedule checks
// themselves.
//
// The package depends only on the ports in package ports; the adapters for
// controller-runtime, the container runtime, bbolt and trireme-lib live under
// adapters/. Pods returned by a PodGetter are treated as read-only: the
// engine never modifies them, and hands the live pod to the Requeuer as it
// got it.
package deletion
