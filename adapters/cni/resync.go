package cni

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// Tracker is what Resync needs of a deletion engine; *deletion.Engine has it.
type Tracker interface {
	Track(ports.PU) error
	Untrack(puid string) bool
	TriggerPod(types.NamespacedName)
}

// listing is one list of the cache as ListPUs makes it: the PUs, the
// sandboxes the cache holds an entry of (collectable or not, used or not: a
// PU told one of them is moved off it when its pod is listed with another,
// Collector.Resync), whether the order is the Runtime's (or there is
// no Runtime), and the pods it could not tell of.
type listing struct {
	pus  []ports.PU
	held map[string]bool
	// dead are the pods, by UID, listed with a sandbox that is dead
	// (stateDead: the Runtime lists it stopped, or its network namespace
	// is gone).
	dead map[string]bool
	told bool
	// unread are the names of the cache's entries it could not read (cut
	// short while libcni writes them, unreadable): one names its sandbox
	// (<network>-<containerID>-<ifName>), whose pod may be any. writing:
	// one of them is being written (cut short, its cached config too): it
	// may be any pod requeued's, which the next list may tell of.
	unread  []string
	writing bool
	// unsure are the pods, by UID, that this list could not tell all of (an
	// entry or the config of one of their networks was being written):
	// whether one not listed left the cache is not known, nor whether one
	// listed would be listed with that sandbox by a whole read.
	unsure map[string]types.NamespacedName
}

// holds reports whether the cache holds an entry of sandbox id: one read (held), or one it could not read that its
// file name says is of id (a link to a device, a named pipe, an entry cut short).
func (l listing) holds(id string) bool {
	return l.held[id] || slices.ContainsFunc(l.unread, func(f string) bool { return strings.Contains(f, "-"+id+"-") })
}

// resyncer feeds an engine with what the cache holds while the agent
// runs (Collector.Resync): its loop, the pods requeued since its last
// list, the Inventory's list it begins from, and the DestroyPU calls that
// ended while it listed. Its methods are its only transitions; it is safe
// from any goroutine.
type resyncer struct {
	interval time.Duration
	log      logr.Logger
	// dryRun: a PU listed before with the same sandbox is not tracked
	// again (Options.DryRun).
	dryRun bool
	// kick asks a running loop to list at once.
	kick    chan struct{}
	running atomic.Bool

	mu sync.Mutex
	// requeued are the pods requeued and not yet triggered, each with the
	// number of its last requeue (requeues counts them): a list reads
	// them, and forgets one it told of that was not requeued again
	// meanwhile (settle); a list left behind forgets none.
	requeued map[podKey]uint64
	requeues uint64
	// inventory holds, of each PUID, the sandboxes the answers of ListPUs
	// since the last list gave it (the engine's Inventory, or another
	// caller's: accounts of what the engine may hold); last is what the
	// last list of a Resync told the engine (PUID to sandbox), from which
	// a Resync called again begins, with leftBehind, what a list a Resync
	// left behind when it returned had told.
	inventory  map[string][]string
	last       map[string]string
	leftBehind map[string]string
	// inventories counts ListPUs' answers: those given while a list ran
	// are the next list's accounts too.
	inventories uint64
	// destroys numbers the DestroyPU calls that ended; destroyed holds,
	// for each PUID, the number of the last, since the list under way
	// began (see once).
	destroys  uint64
	destroyed map[string]uint64
	// carried counts, for each pod requeued, the lists that could not
	// decide on it since (carry): each asks for another list after
	// unsureRetry, maxUnsureRetries times at most.
	carried map[podKey]int
}

// podKey is a pod requeued: its name, and its UID ("": any pod of that
// name), so that a pod recreated under its name is not the one before.
type podKey struct {
	types.NamespacedName
	UID string
}

// requeuedOf reports whether requeued holds the pod of PUID uid named pod.
func requeuedOf(requeued map[podKey]uint64, pod types.NamespacedName, uid string) (podKey, bool) {
	if k := (podKey{pod, uid}); requeued[k] > 0 {
		return k, true
	}
	k := podKey{pod, ""}
	return k, requeued[k] > 0
}

// unsureRetry is how long after a list that could not tell of a requeued
// pod the next is asked for (an entry libcni writes is whole within
// milliseconds); maxUnsureRetries bounds how many times in a row, after
// which the pod waits for the next interval's list, still requeued.
const (
	unsureRetry      = time.Second
	maxUnsureRetries = 5
)

func newResyncer(interval time.Duration, log logr.Logger, dryRun bool) *resyncer {
	return &resyncer{interval: interval, log: log, dryRun: dryRun, kick: make(chan struct{}, 1),
		requeued: make(map[podKey]uint64), destroyed: make(map[string]uint64), carried: make(map[podKey]int)}
}

// requeue asks a running loop to list at once, and to trigger a check of
// pod then. It never blocks.
func (r *resyncer) requeue(pod types.NamespacedName, uid string) {
	r.mu.Lock()
	r.requeues++
	r.requeued[podKey{pod, uid}] = r.requeues
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// inventoryListed records ListPUs' answer l to the engine's Inventory.
// Before Resync's first list, one that lists a pod with a dead sandbox
// asks for that list at once: it triggers them (once), so that what a
// restart left of dead sandboxes (a node's reboot: every one) is freed
// now, not at the PUs' places in the engine's first interval.
func (r *resyncer) inventoryListed(l listing) {
	r.mu.Lock()
	if r.inventory == nil {
		r.inventory = make(map[string][]string, len(l.pus))
	}
	for _, pu := range l.pus {
		if !slices.Contains(r.inventory[pu.PUID], pu.SandboxID) {
			r.inventory[pu.PUID] = append(r.inventory[pu.PUID], pu.SandboxID)
		}
	}
	r.inventories++
	first := r.last == nil
	r.mu.Unlock()
	if first && len(l.dead) > 0 {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// ended records that a DestroyPU of puid ended: a list that began before
// does not track that PU again (once).
func (r *resyncer) ended(puid string) {
	r.mu.Lock()
	r.destroys++
	r.destroyed[puid] = r.destroys
	r.mu.Unlock()
}

// destroyedSince reports whether a DestroyPU of puid ended after the
// destroys-th.
func (r *resyncer) destroyedSince(puid string, destroys uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.destroyed[puid] > destroys
}

// run is Collector.Resync's loop: every interval, and at once after
// requeue, it lists with list and feeds t, then sweeps (host-local's
// reservations, which no PU holds), until ctx ends (nil: at once, whatever t
// does), or it fails at once with ErrResyncRunning when another run runs. It sweeps once at
// start too: a range a reboot filled is freed without waiting an
// interval.
func (r *resyncer) run(ctx context.Context, t Tracker, list func(context.Context) (listing, error), sweep func(context.Context)) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrResyncRunning
	}
	defer r.running.Store(false)
	t = untilDone{ctx: ctx, t: t} // a list left behind once Resync returned calls t no more
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	// The sweep runs on a goroutine of its own, one round at a time, so that a slow DEL or the frees' rate never
	// holds a list (a Requeue's above all). Each list asks for a round that begins after it; asks made while a
	// round runs make one more. Resync returns once the round under way has returned.
	asked := make(chan struct{}, 1)
	ask := func() {
		select {
		case asked <- struct{}{}:
		default: // a round is asked for already: it begins after this list
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-asked:
				sweep(ctx)
			}
		}
	}()
	ask()
	r.mu.Lock()
	// nil: the first list begins from the Inventory's. What a list a Resync left behind had told stands with what
	// the last one told (before any list, as one more account).
	last := maps.Clone(r.last)
	for puid, sb := range r.leftBehind {
		if last != nil {
			last[puid] = sb
		} else if !slices.Contains(r.inventory[puid], sb) {
			if r.inventory == nil {
				r.inventory = map[string][]string{}
			}
			r.inventory[puid] = append(r.inventory[puid], sb)
		}
	}
	r.leftBehind = nil
	r.mu.Unlock()
	// After a list that failed while a pod was requeued, the list is tried again sooner than the next tick: a
	// second after the first such failure, doubling at each in a row up to the interval, so that a requeue waits
	// for the cache to read again, not for the interval.
	var again <-chan time.Time
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-r.kick:
		case <-again:
		}
		again = nil
		select { // a tick due at the same instant as a requeue or a retry lists with it, not once more after it
		case <-tick.C:
		default:
		}
		if ctx.Err() != nil { // ended while a tick or a requeue was ready too: no list begins
			return nil
		}
		// A list runs on a goroutine of its own, so that a Tracker that never returns (an engine whose Observer's
		// commit hangs) cannot keep Resync from returning when ctx ends: the list is then left behind, and tracks
		// nothing more once its call under way has returned.
		// The answers of ListPUs since the list before are this list's accounts beside it (once), and tell records
		// what it tells the engine as it tells it.
		r.mu.Lock()
		inventories, inventory := r.inventories, maps.Clone(r.inventory)
		tell := map[string]string{}
		r.mu.Unlock()
		listed := make(chan listEnd, 1)
		go func(last map[string]string) { listed <- r.once(ctx, t, list, last, inventory, tell) }(last)
		// settled records a list that ended: whole, what it listed is the next one's last, and the accounts it used
		// are spent (those answered while it ran are the next list's); failed, it told nothing, and the last list
		// and every account stand; cut short by ctx's end (or left behind), what it told stands for the next
		// Resync, the PUs it did not reach as they were.
		settled := func(end listEnd) {
			r.mu.Lock()
			defer r.mu.Unlock()
			switch {
			case end.cut:
				r.leftBehind = tell
				return
			case end.failed:
				return
			}
			last, r.last = end.listed, end.listed
			if r.inventories == inventories {
				r.inventory = nil
				return
			}
			for puid, sbs := range r.inventory {
				r.inventory[puid] = slices.DeleteFunc(sbs, func(sb string) bool { return slices.Contains(inventory[puid], sb) })
				if len(r.inventory[puid]) == 0 {
					delete(r.inventory, puid)
				}
			}
		}
		end := listEnd{cut: true} // left behind, unless it ended
		select {
		case end = <-listed:
		case <-ctx.Done():
			select {
			case end = <-listed:
			default:
				r.log.Info("Resync returns with its list under way: the engine has not returned from a call; the list stops once it does")
			}
		}
		settled(end)
		if end.failed {
			wait := r.interval
			if r.hasRequeued() {
				wait = min(time.Second<<min(failures, 30), r.interval)
				if wait < r.interval { // at the interval, the tick lists again
					again = time.After(wait)
				}
				failures++
			} else {
				failures = 0
			}
			r.log.Error(end.err, "listing the cache failed; will list again", "in", wait.String())
		} else {
			failures = 0
		}
		if end.cut || ctx.Err() != nil {
			// Resync ends with the list that saw its context end, whichever it saw first: no list begins after one
			// was cut short, to tell nothing and stand for the next Resync in its place.
			r.kickIfRequeued() // the pods requeued are the next Resync's: it lists at once
			return nil
		}
		ask()
	}
}

// listEnd is how a list of Resync ended: whole, with what it listed
// (PUID to the sandbox the engine holds it with); failed, the cache not
// listed and nothing told; or cut short by the end of Resync's context.
type listEnd struct {
	listed      map[string]string
	failed, cut bool
	err         error // why it failed
}

// once lists the cache and tracks what it lists, recording each PU it
// told the engine in tell (under r.mu); last is the previous list (PUID to
// sandbox; nil before the first), inventory the accounts of ListPUs'
// answers since it. It returns how the list ended.
//
// What the engine holds a PU with is what it was told first (Track is
// insert-only): what the list before told it, or what an Inventory listed
// since gave it, if that list was the engine's and the PU was not held yet.
// ListPUs cannot tell whose list it answers (the engine's, or another
// caller's, which tracked nothing): a PU the list before told is taken as
// held with the sandbox listed now only when every account says so, and is
// triggered, and moved off any sandbox an account gives that is not the
// one listed now; one it did not tell is tracked and triggered (a dry run's
// engine that listed and dropped it since may report it once more).
func (r *resyncer) once(ctx context.Context, t Tracker, list func(context.Context) (listing, error), last map[string]string,
	inventory map[string][]string, tell map[string]string) listEnd {
	r.mu.Lock()
	began := r.destroys
	clear(r.destroyed) // a DestroyPU that ended before this list began is in it
	r.mu.Unlock()
	l, err := list(ctx)
	if err != nil {
		if ctx.Err() != nil { // Resync has returned: cut short, having told nothing
			return listEnd{cut: true}
		}
		return listEnd{failed: true, err: err}
	}
	r.mu.Lock()
	requeued := maps.Clone(r.requeued) // still requeued until settled
	r.mu.Unlock()
	now := sandboxesByPUID(l.pus)
	carry := make(map[string]types.NamespacedName) // pods this list could not decide on, by UID
	triggered := make(map[podKey]bool)             // the requeues it told of
	for uid, pod := range l.unsure {
		carry[uid] = pod
	}
	for _, pu := range l.pus {
		if ctx.Err() != nil { // Resync has returned (run): nothing more is tracked, and the list is cut short
			return listEnd{cut: true}
		}
		// The accounts of what the engine holds it with: the list before's, and an Inventory's listed since (before
		// Resync's first list, the Inventory's alone). A PU missing from the list before left the cache then: it is
		// new to Resync, whatever a list of the Inventory since says (it may be another caller's, and have tracked
		// nothing), and is tracked and triggered.
		accounts := make([]string, 0, 2)
		inLast := false
		if was, ok := last[pu.PUID]; ok {
			accounts, inLast = append(accounts, was), true
		}
		if last == nil || inLast {
			for _, was := range inventory[pu.PUID] {
				if !slices.Contains(accounts, was) {
					accounts = append(accounts, was)
				}
			}
		}
		ok := len(accounts) > 0
		was := ""
		if ok {
			was = accounts[0] // what the next list is compared with when this one cannot decide on it
		}
		other := slices.ContainsFunc(accounts, func(sb string) bool { return sb != pu.SandboxID }) // an account differs
		_, unsure := l.unsure[pu.PUID]
		if r.destroyedSince(pu.PUID, began) || unsure && ok || !l.told && ok && other {
			// What the engine was told stands, and the next list is compared with it, when this list cannot
			// decide on the PU:
			// - the engine destroyed it, or tried, while the cache was read: the list may hold what that
			//   DestroyPU freed, and the engine no PU to insert it into; one it refused left the PU tracked with
			//   the sandbox it was told, which a later list may have to move it from;
			// - some of its attachments could not be told of (their network's entry or config being written):
			//   the sandbox listed may not be the one a whole read would list (unsure carries its requeue);
			// - the order is the cache's times, not the runtime's: neither tracked nor compared.
			// A requeue of the pod is carried to the next list, as unsure's.
			if ok {
				now[pu.PUID] = was
			} else {
				delete(now, pu.PUID)
			}
			carry[pu.PUID] = pu.Pod
			continue
		}
		if i := slices.IndexFunc(accounts, func(sb string) bool { return sb != "" && sb != pu.SandboxID && l.holds(sb) }); i >= 0 &&
			t.Untrack(pu.PUID) {
			r.log.Info("the order of a pod's sandboxes is told now; its PU is tracked again with the older one",
				"puID", pu.PUID, "pod", pu.Pod.String(), "sandboxID", pu.SandboxID, "before", accounts[i])
		}
		_, requeuedNow := requeuedOf(requeued, pu.Pod, pu.PUID)
		// The first list triggers a pod listed with a dead sandbox too: a restart left it, and it is checked now,
		// not at its place in the engine's first interval.
		deadFirst := last == nil && l.dead[pu.PUID]
		if r.dryRun && ok && !other && !requeuedNow {
			// A dry run's engine drops a gone pod's PU once reported: tracked again at each list, it would be
			// reported at each. It is tracked again once it leaves the cache and comes back, or changes sandbox.
			if deadFirst {
				t.TriggerPod(pu.Pod)
			}
			continue
		}
		if err := t.Track(pu); err != nil {
			if ctx.Err() == nil {
				r.log.Error(err, "tracking a PU of the cache failed", "puID", pu.PUID, "pod", pu.Pod.String())
			}
			// Not told to the engine: the next list tracks it, a dry run's too, and a requeue of it is carried to
			// that list.
			delete(now, pu.PUID)
			carry[pu.PUID] = pu.Pod
			continue
		}
		r.mu.Lock()
		tell[pu.PUID] = pu.SandboxID // told: a Resync that returns before this list ends still knows it
		r.mu.Unlock()
		if !ok || other || requeuedNow || deadFirst {
			t.TriggerPod(pu.Pod)
			if k, ok := requeuedOf(requeued, pu.Pod, pu.PUID); ok {
				triggered[k] = true
			}
		}
	}
	for _, uid := range r.unsure(l, last, inventory, now) {
		if _, ok := carry[uid]; !ok {
			carry[uid] = types.NamespacedName{} // its name is not known: its requeue is found by its UID
		}
	}
	if ctx.Err() != nil { // Resync has returned: what was requeued is the next one's, and the list is cut short
		return listEnd{cut: true}
	}
	also := map[podKey]bool{}
	if l.writing { // an entry being written may be any requeued pod's that this list did not trigger
		for k := range requeued {
			also[k] = !triggered[k]
		}
	}
	r.settle(carry, requeued, also)
	return listEnd{listed: now}
}

// hasRequeued reports whether a pod is requeued.
func (r *resyncer) hasRequeued() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requeued) > 0
}

// kickIfRequeued asks for a list at once when a pod is requeued.
func (r *resyncer) kickIfRequeued() {
	if r.hasRequeued() {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// unsure keeps, of the pods the list l could not tell all of
// (listing.unsure) and did not list, what the list before it (last; before
// the first, the Inventory's) said they were tracked with, in now: whether
// they left the cache is not known, and a pod not forgotten is not tracked
// anew (a dry run's would be reported again). So of a PU told before whose
// sandbox an entry l could not read names (cut short while libcni writes
// it): those are returned, by UID, for their requeues to be carried.
func (r *resyncer) unsure(l listing, last map[string]string, inventory map[string][]string, now map[string]string) (cut []string) {
	prev := last
	if prev == nil {
		prev = make(map[string]string, len(inventory))
		for uid, sbs := range inventory {
			prev[uid] = sbs[0]
		}
	}
	for uid, sb := range prev {
		if _, listed := now[uid]; listed {
			continue
		}
		_, unsure := l.unsure[uid]
		named := sb != "" && slices.ContainsFunc(l.unread, func(f string) bool { return strings.Contains(f, "-"+sb+"-") })
		if unsure || named {
			now[uid] = sb
		}
		if named {
			cut = append(cut, uid)
		}
	}
	return cut
}

// settle forgets, of the pods requeued that a list read (requeued), those
// it told of, unless requeued again since; and keeps requeued those it
// could not decide on (pods, by UID: it could not tell all of them, a
// DestroyPU of theirs ended while it read, the Runtime could not order
// their sandboxes, or an entry it could not read names their sandbox; a
// pod of no name known is found by its UID), asking for another list
// after unsureRetry (maxUnsureRetries times in a row at most; then they
// wait for the next interval's list, still requeued); so are those also
// holds.
func (r *resyncer) settle(pods map[string]types.NamespacedName, requeued map[podKey]uint64, also map[podKey]bool) {
	carried := maps.Clone(also)
	for uid, pod := range pods {
		if k, ok := requeuedOf(requeued, pod, uid); ok && pod.Name != "" {
			carried[k] = true
		}
		for k := range requeued {
			if k.UID == uid && pod.Name == "" {
				carried[k] = true
			}
		}
	}
	retry := false
	r.mu.Lock()
	for k, n := range requeued {
		switch {
		case carried[k]:
			r.carried[k]++
			retry = retry || r.carried[k] <= maxUnsureRetries
		case r.requeued[k] == n: // not requeued again since this list read it
			delete(r.requeued, k)
		}
	}
	for k := range r.carried {
		if r.requeued[k] == 0 {
			delete(r.carried, k) // told of at last, or no longer requeued
		}
	}
	r.mu.Unlock()
	if retry {
		time.AfterFunc(unsureRetry, func() {
			select {
			case r.kick <- struct{}{}:
			default:
			}
		})
	}
}

// untilDone is a Tracker that calls t only while ctx is not done: Resync
// returns once ctx ends, and a list it left behind (its call of t under way
// when ctx ended) then begins no call of t once that one returns.
type untilDone struct {
	ctx context.Context
	t   Tracker
}

func (u untilDone) Track(pu ports.PU) error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	return u.t.Track(pu)
}

func (u untilDone) Untrack(puid string) bool { return u.ctx.Err() == nil && u.t.Untrack(puid) }

func (u untilDone) TriggerPod(pod types.NamespacedName) {
	if u.ctx.Err() == nil {
		u.t.TriggerPod(pod)
	}
}

// sandboxesByPUID maps each of pus's PUIDs to its sandbox.
func sandboxesByPUID(pus []ports.PU) map[string]string {
	m := make(map[string]string, len(pus))
	for _, pu := range pus {
		m[pu.PUID] = pu.SandboxID
	}
	return m
}
