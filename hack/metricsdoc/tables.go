package main

import (
	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/ports"
)

// guides says, for each metric the programs export, when to look at it:
// the question it answers or the alert to build on it. generate fails when a
// metric exported has no line here, or a line names a metric no longer
// exported.
var guides = map[string]string{
	k8s.MetricTrackedPUs: "How many PUs the engine holds. It follows the pods that have a PU; " +
		"one that grows while they do not points at PUs not destroyed (see the failures and the backlog).",
	k8s.MetricDestroys: "How fast the PUs of gone pods are destroyed, and why: `rate()` by `reason`. " +
		"A jump of one reason names the churn behind it (pods deleted, recreated under the same name, moved, sandboxes replaced).",
	k8s.MetricDestroyFailures: "The policy engine fails or refuses destroys, and `podsweeper_pus_waiting_for_retry` grows with it; " +
		"the charts' PodsweeperDestroysFailing alert fires on a rate that lasts (docs/operating/runbooks.md).",
	k8s.MetricAbandoned: "Any increase: a PU was given up on after its last failed destroy " +
		"(deletion.Options.MaxDestroyAttempts) and the policy engine may still hold it; clean it up there " +
		"(the charts' PodsweeperDestroysAbandoned alert).",
	k8s.MetricPodGetErrors: "Is the API server, or the pod cache, failing? Pod reads that failed other than not found (or answered another pod); " +
		"a check that hits one keeps its PU until a later check can decide.",
	k8s.MetricCheckDuration: "Are the checks slow? High quantiles near deletion.Options.CheckTimeout (30 s) mean a slow API server " +
		"or policy engine; the queue then backs up (`podsweeper_oldest_queued_check_seconds`).",
	k8s.MetricDestroyDelay: "How long the PU of a gone pod outlives it: the destroys' latency objective. " +
		"Failed attempts and a destroy rate lengthen it.",
	k8s.MetricVetoes: "Is the pod cache behind the API server? Destroys the Confirmer did not confirm, by the cache's reason; " +
		"a steady rate means a stale cache (`SandboxChanged`: a stale sandbox listing).",
	k8s.MetricRestored: "After a restart: how many PUs came back from the Inventory. " +
		"It stays 0 without an Inventory; 0 after a restart that had PUs to restore means the Inventory lost them.",
	k8s.MetricListFailures: "Is the Inventory (a journal) failing at start? Lists that failed or answered past their deadline; " +
		"until one answers, the PUs of pods gone while the program was down are not restored, and no probe fails. " +
		"The charts' PodsweeperInventoryListsFailing alert fires on failures that last (docs/operating/runbooks.md).",
	k8s.MetricWouldDestroy: "During a dry run (deletion.Options.DryRun): what turning destroys on would destroy, by reason. " +
		"Read it before turning destroys on; it stays 0 otherwise.",
	k8s.MetricReservationsFreed: "How many of host-local's reservations that no sandbox or cache entry accounts for the CNI collector freed, by network: " +
		"leaks of a chained plugin's failed ADD or of a failed teardown. The cni-gc chart's PodsweeperCNIReservationsFreedBurst alert fires on a burst.",
	k8s.MetricReservationFreeFailures: "DELs of leaked reservations that fail, or free nothing (the network's config no longer runs host-local there): " +
		"the addresses stay reserved; read the collector's log for the plugin's error.",
	k8s.MetricReservationsWouldFree: "During a dry run: the leaked reservations turning DELs on would free, by network. It stays 0 otherwise.",
	k8s.MetricReservationsReported:  "Reservations of a network whose config is gone from the node: never touched; an operator decides whether to remove them.",
	k8s.MetricRetrying: "Above 0 while destroys fail and wait for their retry, most often a policy engine that is down; " +
		"read it beside `podsweeper_destroy_failures_total`, which the charts alert on.",
	k8s.MetricOldestPendingSecond: "The oldest PU found gone is still not destroyed; it grows, with the retries, while the policy engine is down. " +
		"The charts' PodsweeperDestroyBacklog alert fires past a bound (15 minutes by default, a value) that lasts.",
	k8s.MetricWaitingForRate: "With a destroy rate set (deletion.Options.DestroyRate): the PUs waiting for their turn. " +
		"High for long, it says the rate is too low for the churn; 0 without a rate.",
	k8s.MetricOldestQueuedSecond: "Can the workers keep up? Past 3 sweep intervals the engine's ReadinessCheck fails; " +
		"a slow drain shows here first.",
}

// labelSet is what values a label takes.
type labelSet struct {
	from   string   // the code that lists them; for an open label, what its values are
	values []string // in that code's order
	// open: the values are not a fixed set (a CNI network's name); the
	// metric's series show from their first count, not at 0 from the start.
	open bool
}

// labelOf returns the set of values the label l of the metric named
// metric takes: labels' entry "metric/l" when there is one, else "l".
func labelOf(metric, l string) (labelSet, bool) {
	if set, ok := labels[metric+"/"+l]; ok {
		return set, true
	}
	set, ok := labels[l]
	return set, ok
}

// labels gives, for each label a metric carries, the fixed set of values it
// takes. generate fails when a metric carries a label missing here, or a
// value outside its set.
var labels = map[string]labelSet{
	"reason":                                {from: "ports.Reasons()", values: reasons()},
	"network":                               {from: "the name of a CNI network of the node's config (cni.Reservation.Network): at 0 once the collector read a config of it that runs host-local", open: true},
	k8s.MetricReservationsFreed + "/reason": {from: "cni.ReasonNoSandbox", values: []string{cni.ReasonNoSandbox}},
	k8s.MetricReservationFreeFailures + "/reason": {from: "cni.ReasonNoSandbox", values: []string{cni.ReasonNoSandbox}},
	k8s.MetricReservationsWouldFree + "/reason":   {from: "cni.ReasonNoSandbox", values: []string{cni.ReasonNoSandbox}},
	k8s.MetricReservationsReported + "/reason":    {from: "cni.ReasonConfigGone", values: []string{cni.ReasonConfigGone}},
}

func reasons() []string {
	var vs []string
	for _, r := range ports.Reasons() {
		vs = append(vs, string(r))
	}
	return vs
}

// programs are the deployable programs, as examples/<program> names them.
var programs = []string{"node-agent", "cluster-controller", "cni-gc"}
