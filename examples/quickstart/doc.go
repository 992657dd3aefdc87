// Command quickstart runs podsweeper's engine as a node agent does, with no
// cluster, and prints the row of the decision table behind every check.
//
//	go run ./examples/quickstart      # -v adds the engine's own logs on stderr
//
// The engine runs with Start in the background; the story's "agent" calls
// Track when it creates a PU and TriggerPod on every pod event. Its
// Kubernetes is a few maps in plain Go (api.go): the pods of the API server,
// the lagging copy an informer cache keeps of them (the engine's
// PodGetter), a direct read of the API server (the engine's Confirmer), and
// the container runtime's sandboxes (the SandboxExtractor). It imports only
// deletion, ports, logr and the Kubernetes API types (and the standard
// library): a cold build compiles the core's packages and nothing more,
// about 275 of them, where controller-runtime's fake client took 805.
//
// An Observer (timeline.go) prints every event, and each check with its
// Verdict.Row and Verdict.Why, keeps included; the story waits for these
// events, never for a fixed time. The scenes, one pod each:
//
//  1. a pod deleted (row 1);
//  2. a pod back under its name on another node (row 3);
//  3. a pod recreated under its name on this node (row 4);
//  4. a finished pod, with DestroyTerminated (row 11);
//  5. a sandbox the runtime fails to report (row 6), does not know yet
//     (row 8), reports first (row 7) and again (row 9), then replaces (row
//     10: destroy, and the Requeuer tracks the PU of the new sandbox), and
//     Untrack of a PU the agent tore down itself;
//  6. failed reads keep the PU (row 2), and a delete event lost meanwhile
//     is caught by the periodic check (row 1);
//  7. a failed destroy retried after its backoff, not before, whatever
//     TriggerPod asks, with what Status says meanwhile;
//  8. a ports.Permanent error abandoning the PU;
//  9. the Confirmer vetoing a destroy decided on the cache's NotFound while
//     the API server still has the pod, then confirming the real one.
//
// Row 5 (no SandboxExtractor) needs another engine and is left out. The
// engine re-checks every PU once per SweepInterval (200ms here) whatever
// the story does, so a periodic check may now and then add a line that
// keeps a PU; nothing else varies but the times.
//
// It runs in well under a second, and exits 1 if the engine did not do
// what the story expects.
package main
