package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/podsweeper/podsweeper/ports"
)

// AddressPath is where cni-gc serves AddressHandler, beside the engine's
// status page (/debug/podsweeper) on its status listener:
// GET AddressPath?ip=ADDR answers an AddressStatus.
const AddressPath = "/debug/podsweeper/cni/address"

// AddressStatus is what the Collector holds of one IP address, and what
// it decided of it (AddressHandler): the cache entries whose result holds
// it, host-local's reservations of it as the last round of the
// reservations' sweep read them, and the recent frees of it. All empty:
// no one holds it, as far as the Collector knows.
type AddressStatus struct {
	// IP is the address asked about, in its canonical form.
	IP string `json:"ip"`
	// Attachments are the entries of libcni's cache, read at the request,
	// whose cached result holds the address.
	Attachments []AttachmentStatus `json:"attachments,omitempty"`
	// Reservations are host-local's reservations of the address as the
	// last round of the reservations' sweep read and decided them, at
	// ReservationsRead.
	Reservations []ReservationStatus `json:"reservations,omitempty"`
	// ReservationsRead is when the last round read host-local's
	// reservations; nil: none has yet (or none could read them).
	ReservationsRead *time.Time `json:"reservationsRead,omitempty"`
	// Freed are the Collector's latest frees of the address, oldest
	// first: it remembers its last 256 frees, attachments and
	// reservations together.
	Freed []FreedAddress `json:"freed,omitempty"`
	// Unread says what the Collector could not read for this answer, and
	// why, one line each: ConfDir (a config being written, say), whose
	// networks' disableGC then goes untold (AttachmentStatus.DisableGC
	// tells the cached config's alone), or libcni's cache, whose
	// attachments then go untold. The rest is told all the same.
	Unread []string `json:"unread,omitempty"`
}

// AttachmentStatus is one cache entry that holds an address.
type AttachmentStatus struct {
	Network     string `json:"network"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
	// PodNamespace, PodName and PodUID are the pod's, as the runtime
	// passed them (CNI_ARGS).
	PodNamespace string `json:"podNamespace"`
	PodName      string `json:"podName"`
	PodUID       string `json:"podUID"`
	// Written is when libcni wrote the entry, after the ADD.
	Written time.Time `json:"written"`
	// DisableGC: its network's config, cached or in ConfDir, says
	// disableGC: the Collector never DELs it.
	DisableGC bool `json:"disableGC,omitempty"`
	// File is the entry's file in libcni's cache, told for one the
	// Collector never touches (NeverTouched).
	File string `json:"file,omitempty"`
	// NeverTouched, when set, says why the Collector never DELs this
	// entry: it cannot be used for a DEL (its config, its result, its file
	// name), or it is of no pod (no pod's CNI_ARGS: another runtime's).
	// Its address is held all the same, as far as the Collector knows.
	NeverTouched string `json:"neverTouched,omitempty"`
	// Decision is the last decision the Collector took on its sandbox
	// when the engine asked it to free it for this attachment's pod
	// (DestroyPU, or DryRunDestroyPU in a dry run: another pod's attachment
	// of the same sandbox is not decided on by that call), a keep for want of what it decides on included (Row -1),
	// as it stands for this attachment: kept, of a sandbox to free, when it
	// is never DELed or was kept when decided again before its DEL; nil: it
	// was never asked to, since the Collector started.
	Decision *FreeDecision `json:"decision,omitempty"`
}

// FreeDecision is a decision of the freeing table (docs/sdk/cni-freeing.md)
// on one sandbox or reservation.
type FreeDecision struct {
	At time.Time `json:"at"`
	// Reason is, for a sandbox, the engine's reason to destroy the PU it
	// is of (PodGone, SandboxChanged, ...); for a reservation, the
	// reservation's: ReasonNoSandbox for one the Collector frees,
	// ReasonConfigGone for one it reports, "" for one it keeps.
	Reason string `json:"reason,omitempty"`
	// DryRun: decided by a dry run (DryRunDestroyPU), which frees nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// Row is the row of the freeing table that decided, Why its words;
	// -1 when none could decide, for what it decides on could not be read
	// (the runtime could not be asked, or ConfDir could not be read, when
	// the sandbox was decided on or again right before its DEL): the
	// sandbox is kept, and Why says why.
	Row int    `json:"row"`
	Why string `json:"why"`
	// Verdict is what the row has the Collector do: "free", "keep",
	// "refuse" (keep, and count the refusal towards
	// NewestSandboxTimeout), "give up" (keep, and leave it alone from
	// then on) or "report" (keep, never touch, and tell an operator).
	Verdict string `json:"verdict"`
}

// ReservationStatus is one host-local reservation of an address, as the
// last round of the reservations' sweep read and decided it.
type ReservationStatus struct {
	Network string `json:"network"`
	DataDir string `json:"dataDir"`
	// File is the reservation's file, ContainerID and IfName its lines.
	File        string    `json:"file"`
	ContainerID string    `json:"containerID"`
	IfName      string    `json:"ifName"`
	Reserved    time.Time `json:"reserved"`
	// Decision is the round's (rows 12 to 18 of the freeing table).
	Decision FreeDecision `json:"decision"`
	// State is what became of it in that round, one of the
	// ReservationState constants.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// The states of a reservation (ReservationStatus.State): what became of it
// in the last round of the reservations' sweep.
const (
	// ReservationKept: decided kept (its row says why).
	ReservationKept = "kept"
	// ReservationReported: its network's config is gone; never touched,
	// told to an operator.
	ReservationReported = "reported"
	// ReservationWouldFree: a dry run would free it.
	ReservationWouldFree = "would free"
	// ReservationToFree: decided free, waiting for its turn under the rate.
	ReservationToFree = "to free"
	// ReservationFreed: its DEL released it, or the DEL of another
	// reservation of its container and interface did; Error is set when
	// that DEL failed after host-local released it (a plugin before
	// host-local in the chain failed: DEL runs the chain in reverse), which
	// is not tried again, for nothing names the container any more.
	ReservationFreed = "freed"
	// ReservationFreeFailed: its DEL failed, or succeeded, and host-local
	// still holds it; tried again at the next round (Error says why).
	ReservationFreeFailed = "free failed"
	// ReservationKeptOnRecheck: decided again right before its DEL, on
	// ConfDir and the runtime as they were then, and kept.
	ReservationKeptOnRecheck = "kept: decided again before its DEL"
	// ReservationNotRechecked: kept by no row, for what its DEL is decided
	// on could not be read again right before it (its Decision says why).
	ReservationNotRechecked = "kept: could not be decided again before its DEL"
	// ReservationReleasedMeanwhile: released by its runtime while the round
	// ran, before its DEL.
	ReservationReleasedMeanwhile = "released meanwhile, by its runtime"
	// ReservationNeverTouched: a reservation file the collector never
	// touches (a link's, one that does not read as host-local's), with why.
	ReservationNeverTouched = "never touched"
)

// FreedAddress is one recent free of an address: an attachment a
// DestroyPU DELed, or a reservation a round of the sweep freed.
type FreedAddress struct {
	At time.Time `json:"at"`
	// Reservation: a host-local reservation (its file, DataDir and
	// Network); otherwise an attachment of the cache.
	Reservation bool   `json:"reservation,omitempty"`
	Network     string `json:"network"`
	File        string `json:"file,omitempty"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
	// PodNamespace, PodName and PodUID are the attachment's pod.
	PodNamespace string `json:"podNamespace,omitempty"`
	PodName      string `json:"podName,omitempty"`
	PodUID       string `json:"podUID,omitempty"`
	// Decision is the one that freed it.
	Decision FreeDecision `json:"decision"`
}

// maxFreed is how many frees the Collector remembers for AddressStatus.
const maxFreed = 256

// maxReservationsRecorded bounds the reservations a round records for
// AddressStatus; those past it are decided and freed all the same.
const maxReservationsRecorded = 1 << 16

// verdictWords names each action in a FreeDecision.
var verdictWords = map[action]string{keep: "keep", refuse: "refuse", giveUp: "give up", free: "free", report: "report"}

// decisionOf is the FreeDecision of v, taken at at.
func decisionOf(v verdict, at time.Time, reason ports.Reason, dryRun bool) FreeDecision {
	return FreeDecision{At: at, Reason: string(reason), DryRun: dryRun, Row: v.Row, Why: v.why(), Verdict: verdictWords[v.Action]}
}

// addressLog is what AddressStatus tells beside the cache: the last
// decision on each sandbox the cache holds, host-local's reservations as
// the last round decided them, and the latest frees. Its methods are safe
// from any goroutine.
type addressLog struct {
	mu sync.Mutex
	// decisions are by sandbox ID and pod UID (a DestroyPU decides on the
	// attachments of its own pod, and a sandbox the cache names as two
	// pods' is two decisions), of the sandboxes the cache held at its
	// last read (retain); ofAtts, by sandbox ID then attachment, what
	// became of one attachment apart from its sandbox's decision (kept:
	// never DELed, decided again before its DEL, not decided again), until
	// its sandbox is decided anew.
	decisions map[sandboxOf]FreeDecision
	ofAtts    map[string]map[attKey]FreeDecision
	// reservations are the last round's, by canonical address; read when
	// it read them (zero: never).
	reservations map[string][]ReservationStatus
	read         time.Time
	// over is how many of the last round's reservations were past
	// maxReservationsRecorded, and not recorded; blind are the data
	// directories, or the directories in them, it could not read, and why.
	over  int
	blind []string
	// freed are the latest frees, oldest first, at most maxFreed: one
	// per free, whatever the number of its addresses, which are index for
	// index in freedIPs.
	freed    []FreedAddress
	freedIPs [][]string
}

func newAddressLog() *addressLog {
	return &addressLog{decisions: map[sandboxOf]FreeDecision{}, ofAtts: map[string]map[attKey]FreeDecision{}}
}

// sandboxOf names a sandbox's attachments of one pod: the sandbox's ID
// and the pod's UID.
type sandboxOf struct{ id, uid string }

// attKey names one attachment of a sandbox: its network, its interface
// and its pod's UID.
type attKey struct{ network, ifName, uid string }

// attDecided records d of the attachment a alone. l.mu is held.
func (l *addressLog) attDecided(a attachment, d FreeDecision) {
	m := l.ofAtts[a.ContainerID]
	if m == nil {
		m = map[attKey]FreeDecision{}
		l.ofAtts[a.ContainerID] = m
	}
	m[attKey{a.NetworkName, a.IfName, a.PodUID}] = d
}

// decisionOfAtt returns the decision the page tells of a: its own, or its sandbox's. l.mu is held.
func (l *addressLog) decisionOfAtt(a attachment) (FreeDecision, bool) {
	if d, ok := l.ofAtts[a.ContainerID][attKey{a.NetworkName, a.IfName, a.PodUID}]; ok {
		return d, true
	}
	d, ok := l.decisions[sandboxOf{a.ContainerID, a.PodUID}]
	return d, ok
}

// decided records the decisions vs on the sandboxes sbs (index for index,
// as far as sbs goes), taken at at for the event ev: a sandbox to free
// whose attachment is never DELed (verdict.Del) has that attachment kept.
func (l *addressLog) decided(sbs []sandbox, vs []verdict, at time.Time, ev ports.DestroyEvent, dryRun bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, v := range vs {
		if v.ID == "" {
			continue
		}
		d := decisionOf(v, at, ev.Reason, dryRun)
		l.decisions[sandboxOf{v.ID, ev.PUID}] = d
		for k := range l.ofAtts[v.ID] {
			if k.uid == ev.PUID {
				delete(l.ofAtts[v.ID], k)
			}
		}
		if v.Action != free || i >= len(sbs) {
			continue
		}
		for j, a := range sbs[i].Atts {
			if j < len(v.Del) && !v.Del[j] {
				kept := d
				kept.Verdict, kept.Why = verdictWords[keep], d.Why+"; this attachment is never DELed: its network says disableGC, or it cannot be used for a DEL"
				l.attDecided(a, kept)
			}
		}
	}
}

// undecided records, for each sandbox ids names, that the event ev asked
// to free it at at and that no row could decide, for why: it was kept.
func (l *addressLog) undecided(ids []string, at time.Time, ev ports.DestroyEvent, dryRun bool, why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if id != "" {
			l.decisions[sandboxOf{id, ev.PUID}] = FreeDecision{At: at, Reason: string(ev.Reason), DryRun: dryRun, Row: -1, Why: why.Error(), Verdict: verdictWords[keep]}
		}
	}
}

// attUndecided records that the attachment a, of a sandbox the event ev
// asked to free, was kept at at by no row, for why.
func (l *addressLog) attUndecided(a attachment, at time.Time, ev ports.DestroyEvent, dryRun bool, why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attDecided(a, FreeDecision{At: at, Reason: string(ev.Reason), DryRun: dryRun, Row: -1, Why: why.Error(), Verdict: verdictWords[keep]})
}

// retain forgets the decisions on the sandboxes that held does not hold.
func (l *addressLog) retain(held func(id string) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.decisions {
		if !held(k.id) {
			delete(l.decisions, k)
		}
	}
	for id := range l.ofAtts {
		if !held(id) {
			delete(l.ofAtts, id)
		}
	}
}

// round records a round's reservations, read at read and decided at at,
// each as it decided it: rs and their statuses, index for index, and the
// reservation files it read and never touches (untouched), with why; at
// most maxReservationsRecorded in all, and how many were past it.
func (l *addressLog) round(read, at time.Time, rs []Reservation, sts []ReservationStatus, untouched, blind []skipped) {
	n := min(len(rs), maxReservationsRecorded)
	byIP := make(map[string][]ReservationStatus, n)
	for i, r := range rs[:n] {
		ip := canonicalIP(r.IP)
		byIP[ip] = append(byIP[ip], sts[i])
	}
	over := len(rs) - n
	for _, s := range untouched {
		if n == maxReservationsRecorded {
			over++
			continue
		}
		n++
		r := s.Reservation
		ip := canonicalIP(r.IP)
		byIP[ip] = append(byIP[ip], ReservationStatus{Network: r.Network, DataDir: r.DataDir, File: s.File, ContainerID: r.ContainerID,
			IfName: r.IfName, Reserved: r.Reserved, State: ReservationNeverTouched,
			Decision: FreeDecision{At: at, Row: -1, Why: s.Why, Verdict: verdictWords[keep]}})
	}
	var unread []string
	for _, s := range blind {
		unread = append(unread, s.File+" ("+s.Why+")")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reservations, l.read, l.over, l.blind = byIP, read, over, unread
}

// reservationKept records that r, which the round decided to free, was
// kept right before its DEL by no row, for why.
func (l *addressLog) reservationKept(r Reservation, why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.reservations[canonicalIP(r.IP)] {
		if s.File == r.Path() && s.ContainerID == r.ContainerID {
			s.State, s.Error = ReservationNotRechecked, ""
			s.Decision = FreeDecision{At: time.Now(), Row: -1, Why: why.Error(), Verdict: verdictWords[keep], DryRun: s.Decision.DryRun}
			l.reservations[canonicalIP(r.IP)][i] = s
		}
	}
}

// recheckKept records that the attachment a, decided to be freed, was
// kept when decided again right before its DEL, for why: its sandbox's
// other attachments keep their decision.
func (l *addressLog) recheckKept(a attachment, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.decisions[sandboxOf{a.ContainerID, a.PodUID}]; ok {
		d.At, d.Verdict, d.Why = time.Now(), verdictWords[keep], "decided again right before its DEL: "+why
		l.attDecided(a, d)
	}
}

// reservationState records what became of r in the current round.
func (l *addressLog) reservationState(r Reservation, state string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.reservations[canonicalIP(r.IP)] {
		if s.File == r.Path() && s.ContainerID == r.ContainerID {
			s.State, s.Error = state, ""
			if err != nil {
				s.Error = err.Error()
			}
			l.reservations[canonicalIP(r.IP)][i] = s
		}
	}
}

// freedOne records a free of the addresses ips.
func (l *addressLog) freedOne(ips []string, f FreedAddress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	canon := make([]string, 0, len(ips))
	for _, ip := range ips {
		canon = append(canon, canonicalIP(ip))
	}
	l.freed = append(l.freed, f)
	l.freedIPs = append(l.freedIPs, canon)
	if over := len(l.freed) - maxFreed; over > 0 {
		l.freed = slices.Delete(l.freed, 0, over)
		l.freedIPs = slices.Delete(l.freedIPs, 0, over)
	}
}

// canonicalIP returns ip as net.IP writes it, or ip itself when it is no
// address.
func canonicalIP(ip string) string {
	if p := net.ParseIP(ip); p != nil {
		return p.String()
	}
	return ip
}

// resultIPs returns the addresses of a cached result, of any CNI version:
// "ips" (0.3.0 on), or "ip4" and "ip6" (0.1.0, 0.2.0).
func resultIPs(raw json.RawMessage) []string {
	var r struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
		IP4 *struct {
			IP string `json:"ip"`
		} `json:"ip4"`
		IP6 *struct {
			IP string `json:"ip"`
		} `json:"ip6"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return nil
	}
	var cidrs []string
	for _, a := range r.IPs {
		cidrs = append(cidrs, a.Address)
	}
	for _, a := range []*struct {
		IP string `json:"ip"`
	}{r.IP4, r.IP6} {
		if a != nil {
			cidrs = append(cidrs, a.IP)
		}
	}
	var out []string
	for _, c := range cidrs {
		if ip, _, err := net.ParseCIDR(c); err == nil {
			out = append(out, ip.String())
		} else if ip := net.ParseIP(c); ip != nil {
			out = append(out, ip.String())
		}
	}
	return out
}

// address returns what the Collector holds and decided of ip (a
// canonical address): the cache read now, the rest as recorded. What it
// could not read is in Unread, and the rest is told all the same.
func (c *Collector) address(ip string) AddressStatus {
	st := AddressStatus{IP: ip}
	v, skips, err := c.cache.read()
	if cerr := (confDirError{}); errors.As(err, &cerr) {
		st.Unread = append(st.Unread, "ConfDir: "+err.Error()+": its networks' disableGC is not told (DisableGC tells the cached config's alone)")
	} else if err != nil {
		st.Unread = append(st.Unread, "libcni's cache: "+err.Error()+": its attachments are not told")
	}
	for _, network := range slices.Sorted(maps.Keys(v.writing)) {
		st.Unread = append(st.Unread, v.writing[network]+", of network "+network+
			": whether it says disableGC is not told (DisableGC tells what was read alone), and its attachments are kept until it can be read")
	}
	for _, s := range skips {
		if s.Untold {
			st.Unread = append(st.Unread, "libcni's cache entry "+s.File+": "+s.Why+": what it holds is not told")
		}
	}
	l := c.addresses
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range v.atts {
		if !slices.Contains(resultIPs(a.Result), ip) {
			continue
		}
		as := AttachmentStatus{Network: a.NetworkName, ContainerID: a.ContainerID, IfName: a.IfName, PodNamespace: a.PodNamespace,
			PodName: a.PodName, PodUID: a.PodUID, Written: a.Written, DisableGC: v.disableGC(a)}
		if d, ok := l.decisionOfAtt(a); ok {
			as.Decision = &d
		}
		st.Attachments = append(st.Attachments, as)
	}
	for _, s := range skips { // entries the Collector never DELs, whose result holds the address all the same
		if a := s.Entry; a != nil && slices.Contains(resultIPs(a.Result), ip) {
			as := AttachmentStatus{Network: a.NetworkName, ContainerID: a.ContainerID, IfName: a.IfName,
				PodNamespace: a.PodNamespace, PodName: a.PodName, PodUID: a.PodUID, Written: a.Written, File: a.File,
				NeverTouched: s.Why, DisableGC: v.disableGC(*a)}
			if d, ok := l.decisions[sandboxOf{a.ContainerID, a.PodUID}]; ok { // its sandbox's, as it stands for it: never DELed
				if d.Verdict == verdictWords[free] {
					d.Verdict, d.Why = verdictWords[keep], d.Why+"; this attachment is never DELed: "+s.Why
				}
				as.Decision = &d
			}
			st.Attachments = append(st.Attachments, as)
		}
	}
	st.Reservations = slices.Clone(l.reservations[ip])
	if !l.read.IsZero() {
		t := l.read
		st.ReservationsRead = &t
	}
	for _, d := range l.blind {
		st.Unread = append(st.Unread, "host-local's "+d+": what it holds is not told")
	}
	if l.over > 0 {
		st.Unread = append(st.Unread, fmt.Sprintf("host-local's reservations: the last round read %d more than the %d it records: "+
			"one of this address among them is not told (it is decided and freed all the same)", l.over, maxReservationsRecorded))
	}
	for i, f := range l.freed {
		if slices.Contains(l.freedIPs[i], ip) {
			st.Freed = append(st.Freed, f)
		}
	}
	return st
}

// TimeHeader is the response header in which AddressHandler tells when it
// read what it answers, on the node's clock (RFC 3339 with nanoseconds), as
// adapters/k8s's status page does (k8s.TimeHeader, the same name).
const TimeHeader = "Podsweeper-Time"

// AddressHandler returns an http.Handler of AddressPath: GET or HEAD with
// the query ip=ADDR answers, as JSON, the AddressStatus of that address:
// which attachments of libcni's cache hold it (read at the request), the
// last decision the Collector took on each one's sandbox, host-local's
// reservations of it and what the last round of their sweep did with
// them, and its latest frees. What it could not read (a config of ConfDir
// being written, libcni's cache) it says in AddressStatus.Unread, and
// answers the rest. An ip that is no address is answered 400.
// It decides nothing: it tells what the Collector decided. cni-gc serves
// it on its status listener (--status-bind-address), for kubectl
// podsweeper explain ip.
func (c *Collector) AddressHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		ip := net.ParseIP(r.URL.Query().Get("ip"))
		if ip == nil {
			http.Error(w, "give the address as ?ip=ADDR", http.StatusBadRequest)
			return
		}
		w.Header().Set(TimeHeader, time.Now().UTC().Format(time.RFC3339Nano))
		st := c.address(ip.String())
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st) // a client gone mid-answer is no error of ours
	})
}
