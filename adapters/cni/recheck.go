package cni

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"golang.org/x/time/rate"
)

// evidence is what a DEL is decided on again right before it runs
// (recheck): ConfDir as it is then, and, when recheck asked it, the
// Runtime's answer then.
type evidence struct {
	// nets are ConfDir's networks (readConfDir), by name.
	nets map[string]confNet
	// cached are the networks that a cached config of the cache as it is
	// then says disableGC of (view.keepNets): an entry the runtime's libcni
	// wrote since the decision keeps its network too.
	cached map[string]bool
	// run is the Runtime's answer; the zero view when it was not asked.
	run runtimeView
	// cachedID reports whether an entry of the cache as it is then names a
	// container ID (cachedIDs).
	cachedID func(id string) bool
}

// keepNets returns the networks that a config of ConfDir, or a cached
// config of the cache, says disableGC of (view.keepNets).
func (e evidence) keepNets() map[string]bool {
	keep := maps.Clone(e.cached)
	if keep == nil {
		keep = map[string]bool{}
	}
	for name, n := range e.nets {
		if n.Never {
			keep[name] = true
		}
	}
	return keep
}

// config returns the config of r's network in ConfDir, when one names it
// with host-local and r's data directory (reservationView.config).
func (e evidence) config(r Reservation) (confNet, bool) {
	n, ok := e.nets[r.Network]
	return n, ok && slices.ContainsFunc(n.DataDirs, func(d string) bool { return canonicalDir(d) == r.DataDir })
}

// errNotRechecked: the evidence a DEL is decided on could not be read
// right before it (recheckedDel): it is not run.
var errNotRechecked = errors.New("cni: kept: what its DEL is decided on cannot be read again")

// errBeingWritten: the config of the DEL's network in ConfDir is being
// written (recheckedDel). It keeps that network's DELs alone: the other
// networks' are decided as ever.
var errBeingWritten = errors.New("is being written")

// recheckedDel is the one way the Collector runs a DEL, of an attachment
// (DestroyPU) or of a host-local reservation (Resync): right before it, it
// reads again what the decision rests on and may have changed since it was
// read, ConfDir always (a network's config that says disableGC now, a
// config removed or changed) and the Runtime when ask (a reservation's
// sandbox listed again once time has passed since the round's list); frees
// asks decide or decideReservation again on it, and del runs only when the
// answer still frees. ran: del ran (its error is err). An error wrapping
// errNotRechecked: ConfDir or the Runtime could not be read, or the config
// of network, the DEL's, is being written, and nothing ran.
func (c *Collector) recheckedDel(ctx context.Context, ask bool, network string, frees func(evidence) bool, del func() error) (ran bool, err error) {
	nets, writing, err := readConfDir(c.hostLocal.confDir, c.hostLocal.defaultDataDir)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errNotRechecked, err)
	}
	if f := writing[network]; f != "" {
		return false, fmt.Errorf("%w: the config %s of network %s in ConfDir %w", errNotRechecked, f, network, errBeingWritten)
	}
	var e evidence
	if ask {
		if e.run, err = c.listRuntime(ctx); err != nil {
			return false, fmt.Errorf("%w: %w", errNotRechecked, err)
		}
	}
	// The cache last: an entry written while the Runtime was asked is in it.
	cv, skips, err := c.cache.read()
	if err != nil {
		return false, fmt.Errorf("%w: %w", errNotRechecked, err)
	}
	if w := cv.writingOf(network); w != "" {
		return false, fmt.Errorf("%w: %s, of network %s, %w", errNotRechecked, w, network, errBeingWritten)
	}
	e.nets, e.cached, e.cachedID = nets, cv.keepNets, cachedIDs(cv, skips)
	if !frees(e) {
		return false, nil
	}
	return true, del()
}

// stillDels reports whether decide, asked again on the facts p was decided
// on with the networks that ConfDir says disableGC of in e, still DELs
// attachment j of p.sbs[i]. A network's disableGC (in ConfDir, or in a
// cached config) is the only fact read again: it can only keep more.
func (p destroyPlan) stillDels(e evidence, i, j int) bool {
	now := view{keepNets: e.keepNets()}
	f := p.facts
	f.Sandboxes = slices.Clone(f.Sandboxes)
	for k, sb := range p.cached {
		atts := slices.Clone(f.Sandboxes[k].Atts)
		for m, a := range sb.Atts {
			atts[m].Never = !now.collectable(a)
		}
		f.Sandboxes[k].Atts = atts
	}
	return decide(f)[p.at+i].Del[j]
}

// turn waits for a reservation's turn under l; waited: it did not come at
// once. It fails when ctx ends first.
func turn(ctx context.Context, l *rate.Limiter) (waited bool, err error) {
	res := l.Reserve()
	if !res.OK() {
		return false, errors.New("cni: the frees' rate allows none")
	}
	d := res.Delay()
	if d == 0 {
		return false, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		res.Cancel()
		return true, ctx.Err()
	}
}
