package cni

import (
	"fmt"
	"slices"
	"time"
)

// nsState is what the network namespace path a cache entry was added with
// tells of its sandbox (netnsGone, netnsPresent).
type nsState uint8

const (
	// nsUnknown: nothing is told ("", a relative path, a directory this
	// process does not see).
	nsUnknown nsState = iota
	// nsPresent: the path is there, namespace or not.
	nsPresent
	// nsGone: the path is gone from a directory that is there, or names a
	// process that is gone.
	nsGone
)

// attFacts is what the collector read of one cached attachment of a
// sandbox.
type attFacts struct {
	// NetNS is what its cached network namespace path tells.
	NetNS nsState
	// Never: its network says disableGC (the cached config or ConfDir's).
	Never bool
}

// sandboxFacts is what the collector read of one sandbox of a pod: from
// the Runtime's answer, from the cache, and from the refusals so far.
type sandboxFacts struct {
	ID string
	// Listed: the Runtime lists it. Ready: it lists it ready (a sandbox
	// listed twice is ready if either answer says so).
	Listed, Ready bool
	// Atts are its attachments in the cache; none when the cache holds
	// none of it (a sandbox the Runtime lists only).
	Atts []attFacts
	// Unused is what the network namespace paths of its container's other
	// cache entries tell: those not used (links, entries under a name not
	// libcni's, of no pod's arguments) and another pod's attachments:
	// what such an entry holds counts as any entry's for whether the
	// namespace is gone (stateOf), though the entry is never DELed.
	Unused []nsState
	// Created is when it was created: the Runtime's CreatedAt where it
	// lists it with one, otherwise when its first attachment was written;
	// zero when neither tells. A sandbox listed at two times was created
	// at the latest at Created, and at the earliest at Earliest (zero:
	// Created).
	Created, Earliest time.Time
	// Expired: DestroyPU has refused it for NewestSandboxTimeout or longer
	// since the Runtime last listed it ready (refusals.expired).
	Expired bool
	// Contested: the cache and the Runtime name two pods for it (the
	// cache holds it as one pod's, the Runtime lists it as another's): it
	// is never the later sandbox of row 6.
	Contested bool
}

// podFacts is what the collector read to decide on the sandboxes of one
// pod UID.
type podFacts struct {
	// Changed: the event frees one sandbox of a pod that lives on
	// (ports.ReasonSandboxChanged, ports.ReasonSandboxDead). Otherwise the
	// pod is gone (gone from the API, recreated, bound elsewhere,
	// finished), and every sandbox of its UID is to be freed.
	Changed bool
	// Asked: the Runtime (Options.Runtime) was asked and answered; false
	// when there is none.
	Asked bool
	// Sandboxes are the pod's sandboxes that the cache holds or the
	// Runtime lists.
	Sandboxes []sandboxFacts
}

// sandboxState is what the collector knows of a sandbox, whatever the
// event: ListPUs orders a pod's sandboxes by it (dead first, ready last),
// and SandboxDead answers whether it is stateDead.
type sandboxState uint8

const (
	// stateDead: the Runtime lists it stopped, or does not list it and
	// its network namespace is gone: the path of one of its entries is
	// gone, and none of them names one that is there (those not used
	// included: sandboxFacts.Unused).
	stateDead sandboxState = iota
	// stateUnknown: nothing is told.
	stateUnknown
	// stateCreating: the Runtime does not list it and its network
	// namespace is there: it may be one the runtime is creating (containerd
	// and CRI-O make the namespace before ADD and list the sandbox only
	// after ADD, create and start).
	stateCreating
	// stateReady: the Runtime lists it ready: the pod's current one.
	stateReady
)

// action is what a verdict has DestroyPU do with a sandbox.
type action uint8

const (
	// keep: free nothing; the error is a plain one, and the engine checks
	// the pod again with backoff.
	keep action = iota
	// refuse: keep, and count the refusal towards NewestSandboxTimeout
	// (refusals.refuse).
	refuse
	// giveUp: keep, and leave the sandbox alone from now on
	// (ErrOrderUnknown, permanent).
	giveUp
	// free: DEL its attachments, but those of disableGC networks (a
	// reservation: DEL it through its network's current config).
	free
	// report: keep, never touch, and tell an operator (a reservation whose
	// network's config is gone).
	report
)

// verdict is decide's answer for one sandbox.
type verdict struct {
	ID     string
	State  sandboxState
	Action action
	// Del tells, for each of the sandbox's attachments (sandboxFacts.Atts),
	// whether to DEL it: Action is free and its network is not disableGC.
	Del []bool
	// Row is the row of decide's table that decided.
	Row int
	// Unasked: the Runtime was not asked, or did not answer (row 7's
	// place cannot be told for that reason), for why.
	Unasked bool
}

// rowText describes each row of decide's table, for errors and logs.
var rowText = [...]string{
	0:  "a sandbox change, and the cache holds no attachment of it that may be freed",
	1:  "the runtime lists it ready",
	2:  "the pod is gone, and the runtime lists another sandbox of it ready or may be creating one",
	3:  "the runtime lists it stopped",
	4:  "the runtime does not list it and its network namespace is gone (no attachment of it names one that is there)",
	5:  "no runtime to ask, and its network namespace is not known to be gone",
	6:  "a sandbox change, and a sandbox of the pod was created strictly later",
	7:  "a sandbox change, and its place among the pod's sandboxes cannot be told yet",
	8:  "a sandbox change, and its place has not been told for NewestSandboxTimeout",
	9:  "the runtime may be creating it (not listed, its network namespace there)",
	10: "not listed, its network namespace there, for NewestSandboxTimeout",
	11: "the runtime does not list it, and its network namespace tells nothing",
	12: "a host-local reservation whose network's config is gone from ConfDir: reported, never touched",
	13: "a host-local reservation of a network that a config in ConfDir names with disableGC",
	14: "a host-local reservation, and no runtime to ask",
	15: "a host-local reservation of a sandbox the runtime lists",
	16: "a host-local reservation of a sandbox the cache holds an attachment of, or whose DEL would remove a file never touched",
	17: "a host-local reservation younger than ReservationGrace, or whose DEL would release one: its sandbox may be being created",
	18: "a host-local reservation of no sandbox the runtime lists or the cache holds, older than ReservationGrace",
}

// Reasons of the host-local reservations the Collector frees or reports
// (Observer, WouldFree).
const (
	// ReasonNoSandbox: the reservation's container is no sandbox the
	// runtime lists, ready or not, no cache entry names it, and it is older
	// than Options.ReservationGrace (row 18): freed.
	ReasonNoSandbox = "NoSandbox"
	// ReasonConfigGone: no config in Options.ConfDir names the
	// reservation's network with host-local and its data directory (row
	// 12): reported, never touched. Its config is gone, or runs host-local
	// through a plugin that writes its delegate's config at run time (as
	// flannel does), which the collector cannot DEL through.
	ReasonConfigGone = "ConfigGone"
)

// reasonOf returns the reason of a reservation's verdict that frees or
// reports it, "" for one that keeps it.
func reasonOf(v verdict) string {
	switch v.Row {
	case 18:
		return ReasonNoSandbox
	case 12:
		return ReasonConfigGone
	}
	return ""
}

// why describes the row that decided.
func (v verdict) why() string {
	if v.Row == 7 && v.Unasked {
		return rowText[v.Row] + ": the runtime did not answer"
	}
	if v.Row >= 0 && v.Row < len(rowText) {
		return rowText[v.Row]
	}
	return fmt.Sprintf("freeing row %d", v.Row)
}

// decide holds the whole rule of whether a sandbox's attachments may be
// freed, and of whether a sandbox is dead (doc.go, "When a sandbox may be
// freed"). It does no I/O: the collector reads the cache, the Runtime, the
// network namespaces and its refusals into p (observe), and DestroyPU,
// SandboxDead and ListPUs' order carry out what it answers, one verdict
// for each of p.Sandboxes, in their order. For each sandbox, the rows in
// the order they are tried:
//
//  0. A sandbox change, and the cache holds no attachment of the sandbox
//     but of disableGC networks, or none: keep, nothing to do. Whatever
//     the row, an attachment of a disableGC network is never DELed.
//  1. The Runtime lists it ready: keep. It is the pod's current sandbox;
//     a gone pod runs whatever the API says (a static pod whose mirror
//     pod is missing).
//  2. The pod is gone, and the Runtime lists another of its sandboxes
//     ready, or may be creating one (as row 9): keep.
//  3. The Runtime lists it stopped: free.
//  4. The Runtime does not list it, or there is none, and its network
//     namespace is gone: the namespace of one of its attachments is gone,
//     and none of them names one that is there: free. Attachments that
//     disagree tell nothing certain: the namespace may be there. Its
//     container's other cache entries (not used: links, names not
//     libcni's; or another pod's) are counted here as its attachments are.
//  5. The pod is gone, and there is no Runtime to ask: keep. Without one,
//     nothing but a gone namespace (row 4) is evidence.
//  6. A sandbox change, the Runtime was asked, and a sandbox of the pod
//     was created strictly later (the Runtime's CreatedAt, each of them
//     where it lists one twice, the cache's write time; never one the
//     cache and the Runtime name two pods for), and the Runtime lists no running sandbox of the pod without
//     an ID (which may be this one): free. It is not one being created.
//  7. A sandbox change, refused for less than NewestSandboxTimeout:
//     keep, and count the refusal.
//  8. A sandbox change, refused for NewestSandboxTimeout: give up.
//  9. The pod is gone, and the Runtime may be creating the sandbox (it
//     does not list it, and its network namespace is there), refused for
//     less than NewestSandboxTimeout: keep, and count the refusal.
//  10. The same, refused for NewestSandboxTimeout: free; no sandbox is
//     created for so long.
//  11. The pod is gone, the Runtime does not list the sandbox, and its
//     network namespace tells nothing: free.
//
// A host-local reservation that no cache entry may account for (its
// address reserved by an ADD whose chain failed later, or kept by a DEL
// that failed after CRI-O removed the cache entry) is decided by
// decideReservation, on the rows that follow:
//
//  12. No config in ConfDir names its network with host-local and its
//     data directory: report, never touch. There is no config to DEL it
//     with, and removing the file by hand would bypass host-local's lock.
//  13. A config in ConfDir names its network with disableGC, whichever
//     file the runtime loads: keep.
//  14. There is no Runtime to ask, or it did not answer: keep.
//  15. The Runtime lists a sandbox of its container ID, ready or not:
//     keep. The runtime DELs its own sandboxes.
//  16. A cache entry names its container ID: keep; rows 0 to 11 decide
//     on that sandbox. Or its DEL would remove a file the collector never
//     touches (a link naming its container; where host-local releases
//     the container more than once in one DEL, two host-locals or two
//     range sets, a file naming its container alone, which the releases
//     after the first remove), or may (a FIFO, a device, a
//     directory, a link whose content cannot be told, in its network's
//     directory): keep.
//  17. It, or another reservation of its container and interface in its
//     network (one DEL releases them all), was reserved less than
//     ReservationGrace ago: keep. Its sandbox may be one the runtime is creating (containerd
//     lists it only after ADD, create and start).
//  18. Otherwise: free, with a DEL through the network's current config.
//
// So nothing is freed that the Runtime lists ready, nor, until it has
// been refused for NewestSandboxTimeout, one it may be creating; and
// without a Runtime, nothing but a sandbox whose network namespace is
// gone; and no reservation of a sandbox the Runtime lists, or that the
// cache holds (FuzzDecide and FuzzDecideReservation hold them).
func decide(p podFacts) []verdict {
	out := make([]verdict, len(p.Sandboxes))
	podRuns := slices.ContainsFunc(p.Sandboxes, func(s sandboxFacts) bool {
		st := stateOf(s, p.Asked)
		return st == stateReady || st == stateCreating && !s.Expired
	})
	for i, s := range p.Sandboxes {
		v := verdict{ID: s.ID, State: stateOf(s, p.Asked)}
		v.Row = row(p, s, v.State, podRuns)
		v.Unasked = v.Row == 7 && !p.Asked
		switch v.Row {
		case 3, 4, 6, 10, 11:
			v.Action = free
		case 7, 9:
			v.Action = refuse
		case 8:
			v.Action = giveUp
		}
		v.Del = make([]bool, len(s.Atts))
		for j, a := range s.Atts {
			v.Del[j] = v.Action == free && !a.Never
		}
		out[i] = v
	}
	return out
}

// row returns the row of decide's table that decides on s, whose state is
// st; podRuns: the pod has a sandbox of row 1 or 9.
func row(p podFacts, s sandboxFacts, st sandboxState, podRuns bool) int {
	creating := st == stateCreating && !s.Expired
	switch {
	case p.Changed && !slices.ContainsFunc(s.Atts, func(a attFacts) bool { return !a.Never }):
		return 0
	case st == stateReady:
		return 1
	case !p.Changed && podRuns && !creating:
		return 2
	case s.Listed:
		return 3
	case st == stateDead:
		return 4
	case !p.Changed && !p.Asked:
		return 5
	case p.Changed && p.Asked && newer(p.Sandboxes, s) && !slices.ContainsFunc(p.Sandboxes, runningNoID):
		return 6
	case p.Changed && !s.Expired:
		return 7
	case p.Changed:
		return 8
	case creating:
		return 9
	case st == stateCreating:
		return 10
	}
	return 11
}

// stateOf returns what is known of s, the Runtime asked or not.
func stateOf(s sandboxFacts, asked bool) sandboxState {
	says := func(ns nsState) bool {
		return slices.Contains(s.Unused, ns) || slices.ContainsFunc(s.Atts, func(a attFacts) bool { return a.NetNS == ns })
	}
	present := says(nsPresent)
	switch {
	case s.Listed && s.Ready:
		return stateReady
	case s.Listed, !present && says(nsGone):
		return stateDead
	case asked && present:
		return stateCreating
	}
	return stateUnknown
}

// runningNoID reports whether s is the running sandbox the Runtime lists without an ID (observe): it may be any.
func runningNoID(s sandboxFacts) bool { return s.ID == "" && s.Listed && s.Ready }

// newer reports whether a sandbox among sbs, of the pod by every account, was created strictly after s by every time
// told of their creations.
func newer(sbs []sandboxFacts, s sandboxFacts) bool {
	return slices.ContainsFunc(sbs, func(o sandboxFacts) bool {
		earliest := o.Earliest
		if earliest.IsZero() {
			earliest = o.Created
		}
		return !o.Contested && earliest.After(s.Created)
	})
}

// reservationFacts is what the collector read of one host-local
// reservation (decideReservation).
type reservationFacts struct {
	// ContainerID is the reservation's.
	ContainerID string
	// Config: a config in ConfDir names its network with host-local and
	// its data directory. Never: that config says disableGC.
	Config, Never bool
	// Asked: the Runtime (Options.Runtime) was asked and answered.
	Asked bool
	// Listed: the Runtime lists a sandbox of the container ID, ready or
	// not.
	Listed bool
	// Cached: an entry of libcni's cache names the container ID, whatever
	// its network.
	Cached bool
	// Untouched: host-local's DEL of it would remove a file the collector
	// never touches (one naming the container, not a regular file), or may
	// (one whose content cannot be told).
	Untouched bool
	// Age is how long ago the newest reservation of its container and
	// interface in its network was reserved (the file's modification time; negative for a
	// time in the future): host-local's DEL releases them all.
	Age time.Duration
	// Grace is Options.ReservationGrace.
	Grace time.Duration
}

// decideReservation is decide's rule for a host-local reservation, rows
// 12 to 18 of its table: it does no I/O.
func decideReservation(r reservationFacts) verdict {
	v := verdict{ID: r.ContainerID, State: stateUnknown}
	switch {
	case !r.Config:
		v.Row, v.Action = 12, report
	case r.Never:
		v.Row = 13
	case !r.Asked:
		v.Row = 14
	case r.Listed:
		v.Row = 15
	case r.Cached, r.Untouched:
		v.Row = 16
	case r.Age < r.Grace:
		v.Row, v.State = 17, stateCreating
	default:
		v.Row, v.Action, v.State = 18, free, stateDead
	}
	return v
}
