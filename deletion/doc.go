// Package deletion is the core of podsweeper: it decides when the processing unit (PU) a node agent created for a pod
// must be destroyed, and destroys it once the pod is really gone, without a finalizer on the pod.
//
// Decide holds the whole decision table as a pure function. Engine runs it: Track remembers a PU, Start re-checks every
// PU about every SweepInterval and at once after TriggerPod, with bounded concurrency, deadlines, retries with backoff,
// a destroy rate, and recovery from ports that fail, hang or panic; a Confirmer reads the live API before any destroy a
// cache decided, and an Inventory restores the PUs of a previous run. Status says why each PU is kept; LivenessCheck
// and ReadinessCheck serve a manager's probes.
//
// The package depends only on the ports in package ports; the adapters live
// under adapters/. The engine never modifies the pods a PodGetter returns.
package deletion
