package cni

import (
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// observe gathers what decide needs of the pod uid: its sandboxes in atts
// (the cache's attachments of every pod) and those of uid that rv lists
// (as uid's, or as no pod's while an entry of the cache not used names it uid's),
// and those only an entry not used names as uid's, which rv does not list,
// what their network namespaces tell, and which expired tells have been
// refused for NewestSandboxTimeout, which the cache and rv name two pods
// for (contested), and what the network namespaces of
// the other entries of v (v.othersOf) of each of its cached sandboxes'
// containers tell. It returns the cached sandboxes too:
// the first len(sbs) of p.Sandboxes are sbs's, in their order (sandboxesOf),
// and their Atts are sbs's Atts, index for index; the Runtime's others
// follow, by ID, and last, when rv lists one of uid ready without an ID,
// a sandbox of ID "" listed ready: the pod runs (decide's row 2), and,
// created at no known time, it is never the later one of row 6.
func observe(atts []attachment, v view, collectable func(attachment) bool, rv runtimeView, uid string, changed bool, expired func(id string) bool) (p podFacts, sbs []sandbox) {
	sbs = sandboxesOf(atts, uid, rv)
	p = podFacts{Changed: changed, Asked: rv.asked, Sandboxes: make([]sandboxFacts, 0, len(sbs))}
	for _, sb := range sbs {
		f := rv.facts(sb.ID)
		f.Created, f.Earliest, f.Expired = sb.Created, sb.Earliest, expired(sb.ID)
		listed, ok := rv.byID[sb.ID]
		f.Contested = ok && podUIDOf(listed) != "" && podUIDOf(listed) != uid || v.namesAnother(sb.ID, uid)
		for _, a := range sb.Atts {
			f.Atts = append(f.Atts, attFacts{NetNS: netnsOf(a.NetNS), Never: !collectable(a)})
		}
		f.Unused = v.othersOf(sb.ID, uid)
		p.Sandboxes = append(p.Sandboxes, f)
	}
	var others []sandboxFacts
	for id, listed := range rv.byID {
		// Listed as the pod's, or as no pod's while an entry of the cache not used (a link) names the pod for it.
		ofPod := podUIDOf(listed) == uid || podUIDOf(listed) == "" && v.unusedNames(id, uid)
		if !ofPod || slices.ContainsFunc(sbs, func(s sandbox) bool { return s.ID == id }) {
			continue
		}
		f := rv.facts(id)
		f.Created, f.Earliest = rv.created(id, uid, f.Created)
		f.Expired = expired(id)
		f.Contested = v.namesAnother(id, uid)
		others = append(others, f)
	}
	for _, u := range v.unused {
		// Named the pod's only by an entry not used, and not listed: what its network namespace tells (row 9: the
		// runtime may be creating it) is the pod's.
		id := u.ContainerID
		if u.PodUID != uid || id == "" || rv.byID[id] != nil ||
			slices.ContainsFunc(sbs, func(s sandbox) bool { return s.ID == id }) ||
			slices.ContainsFunc(others, func(s sandboxFacts) bool { return s.ID == id }) {
			continue
		}
		f := rv.facts(id)
		f.Expired, f.Contested, f.Unused = expired(id), v.namesAnother(id, uid), v.othersOf(id, uid)
		others = append(others, f)
	}
	slices.SortFunc(others, func(x, y sandboxFacts) int { return strings.Compare(x.ID, y.ID) })
	if rv.runningNoID[uid] {
		others = append(others, sandboxFacts{Listed: true, Ready: true})
	}
	p.Sandboxes = append(p.Sandboxes, others...)
	return p, sbs
}

// namesAnother reports whether the cache holds the container id as another pod's than uid: an attachment of it, or
// an entry not used (a link, a name not libcni's) whose pod's arguments it could read.
func (v view) namesAnother(id, uid string) bool {
	return slices.ContainsFunc(v.atts, func(a attachment) bool { return a.ContainerID == id && a.PodUID != uid }) ||
		slices.ContainsFunc(v.unused, func(u skipped) bool { return u.ContainerID == id && u.PodUID != "" && u.PodUID != uid })
}

// unusedNames reports whether an entry of the cache not used (a link, a name not libcni's) names the container id
// as the pod uid's.
func (v view) unusedNames(id, uid string) bool {
	return slices.ContainsFunc(v.unused, func(u skipped) bool { return u.ContainerID == id && u.PodUID == uid })
}

// othersOf returns what the network namespace paths of the cache's entries of the container id tell, but for the
// attachments of the pod uid: its entries not used (links, names not libcni's, of no pod's arguments) and another
// pod's attachments of it. A container is one sandbox, whatever pod its entries name.
func (v view) othersOf(id, uid string) []nsState {
	var out []nsState
	for _, u := range v.unused {
		if u.Entry != nil && u.ContainerID == id {
			out = append(out, netnsOf(u.Entry.NetNS))
		}
	}
	for _, a := range v.atts {
		if a.ContainerID == id && a.PodUID != uid {
			out = append(out, netnsOf(a.NetNS))
		}
	}
	return out
}

// netnsOf returns what the network namespace path an attachment was added
// with tells.
func netnsOf(path string) nsState {
	switch {
	case netnsGone(path):
		return nsGone
	case netnsPresent(path):
		return nsPresent
	}
	return nsUnknown
}

// podUIDOf returns the UID of the pod a listed sandbox is of: the kubelet's label, or the UID in its metadata,
// which the runtime puts in the cache's K8S_POD_UID.
func podUIDOf(sb *runtimeapi.PodSandbox) string {
	if uid := sb.GetLabels()[podUIDLabel]; uid != "" {
		return uid
	}
	return sb.GetMetadata().GetUid()
}
