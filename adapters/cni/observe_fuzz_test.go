package cni

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FuzzObserve holds the freeing rule's first promises on the runtime's and the cache's raw answers, before they are
// facts: what viewOf, sandboxesOf and observe make of them, decide decides on. FuzzDecide holds them on the facts; this
// holds that the facts never tell more than the answers do. Pod P has up to three sandboxes in the cache (c0, the
// sandbox change's, then c1 and c2, either of which the cache may hold as pod Q's), and the runtime lists any of
// them, or others, as P's, Q's or no pod's, ready, stopped or in a state CRI does not name, created at any time or none,
// any number of times, with or without an ID, its label and its metadata naming one pod or two. For a gone pod P, no
// sandbox is freed while a listing not stopped names P. decide's verdicts, each as if a sandbox change of that sandbox
// were asked, may free:
//   - no sandbox that any listing lists not stopped;
//   - by row 6, nothing while the runtime lists a running sandbox of P without an ID;
//   - a sandbox that may be being created (not listed, its network namespace there) only when a sandbox of P, that
//     neither the cache nor any listing names as another pod's, was created strictly later by every time told of it:
//     each listing's creation time, or, listed with none, its first cache entry's.
func FuzzObserve(f *testing.F) {
	f.Add([]byte{0x01, 0x11, 0x19, 0x01, 0x00, 1, 0x01, 0x00, 60})       // c1 listed twice as P's, before and after c0
	f.Add([]byte{0x01, 0x11, 0x05, 0x09, 0x00, 60})                      // c1 cached as Q's, listed as P's, later
	f.Add([]byte{0x01, 0x11, 0x0d, 0x01, 0x00, 60})                      // c1 cached as P's, older, listed as Q's, later
	f.Add([]byte{0x02, 0x11, 0x09, 0x45, 0x03, 0x00, 60})                // n3 listed as P's, later: a sandbox change frees c0
	f.Add([]byte{0x02, 0x11, 0x09, 0x45, 0x03, 0x00, 60, 0x02, 0x01, 0}) // c2 listed stopped too
	f.Add([]byte{0x00, 0x12})                                            // c0's namespace gone, nothing listed
	f.Add([]byte{0x00, 0x12, 0x07, 0x00, 0x00})                          // c0's namespace gone, a nil listing
	dir := f.TempDir()
	present := filepath.Join(dir, "present")
	if err := os.WriteFile(present, nil, 0o644); err != nil {
		f.Fatal(err)
	}
	netns := [...]string{"", present, filepath.Join(dir, "gone")}
	base := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 {
			return
		}
		n := int(raw[0])%3 + 1
		if len(raw) < 1+n {
			return
		}
		// The cache: sandbox ci's entry, its pod, its network namespace and when it was written.
		var atts []attachment
		owner := map[string]string{}
		for i, b := range raw[1 : 1+n] {
			id, uid := fmt.Sprintf("c%d", i), "P"
			if i > 0 && b&4 != 0 {
				uid = "Q"
			}
			owner[id] = uid
			atts = append(atts, attachment{File: "net-" + id + "-eth0", Written: base.Add(time.Duration(b>>3) * time.Minute), PodUID: uid,
				cacheEntry: cacheEntry{ContainerID: id, NetworkName: "net", IfName: "eth0", NetNS: netns[b&3%3]}})
		}
		// Sandbox c1 or c2 may be held through an entry not used (a link): read, never DELed (raw[0]'s bits 0x40, 0x20).
		v := view{}
		for _, a := range atts {
			if a.ContainerID == "c1" && raw[0]&0x40 != 0 || a.ContainerID == "c2" && raw[0]&0x20 != 0 {
				v.unused = append(v.unused, skipped{File: a.File, ContainerID: a.ContainerID, PodUID: a.PodUID, Entry: &a})
				continue
			}
			v.atts = append(v.atts, a)
		}
		// The runtime's listings, three bytes each.
		var sbs []*runtimeapi.PodSandbox
		for r := raw[1+n:]; len(r) >= 3 && len(sbs) < 6; r = r[3:] {
			if r[0]&7 == 7 { // a nil listing, which a Runtime of Go code may answer
				sbs = append(sbs, nil)
				continue
			}
			id := [...]string{"c0", "c1", "c2", "n3", "n4", ""}[int(r[0]&7)%6]
			uid := [...]string{"P", "Q", ""}[int(r[0]>>3)%3]
			state := [...]runtimeapi.PodSandboxState{runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, 7}[int(r[1])%3]
			sb := &runtimeapi.PodSandbox{Id: id, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}}
			if label := [...]string{"", "P", "Q"}[int(r[1]>>2)%3]; label != "" { // the kubelet's label, which may name another pod
				sb.Labels = map[string]string{"io.kubernetes.pod.uid": label}
			}
			if r[2] != 0 {
				sb.CreatedAt = base.Add(time.Duration(r[2]) * time.Minute).UnixNano()
			}
			sbs = append(sbs, sb)
		}
		rv, err := viewOf(sbs)
		if err != nil {
			return // a failed answer keeps everything
		}
		for _, sb := range sbs {
			// A listing not stopped of no ID and no pod (a nil one reads so) may be any sandbox: the answer is a failure.
			if sb.GetId() == "" && podUIDOf(sb) == "" && sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Fatalf("the runtime's answer lists a running sandbox of no ID and no pod (%v), and was decided on", sb)
			}
		}
		changed := raw[0]&0x80 == 0
		p, cached := observe(v.atts, v, func(attachment) bool { return true }, rv, "P", changed, func(string) bool { return false })
		// runsP: a listing not stopped names P (its label or its metadata): P may run in it; noID: one without an ID.
		runsP, noID := false, false
		for _, sb := range sbs {
			if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY && (sb.GetLabels()["io.kubernetes.pod.uid"] == "P" || sb.GetMetadata().GetUid() == "P") {
				runsP, noID = true, noID || sb.GetId() == ""
			}
		}
		listings := func(id string) (out []*runtimeapi.PodSandbox) {
			for _, sb := range sbs {
				if sb.GetId() == id {
					out = append(out, sb)
				}
			}
			return out
		}
		// createdOf is the creation of the cached sandbox id as the rule reads it: its listing's time, or its first
		// entry's.
		createdOf := func(id string) (t time.Time) {
			for _, s := range cached {
				if s.ID == id {
					t = s.Created
				}
			}
			return t
		}
		// laterOfP reports whether id is a sandbox of P created strictly after created by every time told of it.
		laterOfP := func(id string, created time.Time) bool {
			if id == "" || owner[id] == "Q" {
				return false
			}
			told, ofP := false, owner[id] == "P"
			for _, sb := range listings(id) {
				switch podUIDOf(sb) {
				case "Q":
					return false
				case "P":
					ofP = true
				}
				if sb.GetCreatedAt() != 0 {
					told = true
					if !time.Unix(0, sb.GetCreatedAt()).After(created) {
						return false
					}
				}
			}
			if !told {
				written, ok := time.Time{}, false
				for _, a := range atts {
					if a.ContainerID == id && (!ok || a.Written.Before(written)) {
						written, ok = a.Written, true
					}
				}
				if !ok || !written.After(created) {
					return false
				}
			}
			return ofP
		}
		for i, vd := range decide(p) {
			s := p.Sandboxes[i]
			if vd.Action != free {
				continue
			}
			for _, sb := range listings(s.ID) {
				if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
					t.Fatalf("row %d frees %s, listed %v: cache %+v, listings %v", vd.Row, s.ID, sb.GetState(), atts, sbs)
				}
			}
			if !changed && runsP {
				t.Fatalf("row %d frees %s of a gone pod P which the runtime lists running: cache %+v, listings %v", vd.Row, s.ID, atts, sbs)
			}
			for _, a := range atts { // every entry, used or not
				if !changed && a.PodUID == "P" && len(listings(a.ContainerID)) == 0 && netnsPresentOf(atts, a.ContainerID) {
					t.Fatalf("row %d frees %s of a gone pod P whose sandbox %s may be being created (an entry names it P's, not listed, its network namespace there): cache %+v, unused %v, listings %v",
						vd.Row, s.ID, a.ContainerID, v.atts, v.unused, sbs)
				}
			}
			if changed && noID && vd.Row == 6 {
				t.Fatalf("row 6 frees %s while the runtime lists a running sandbox of P without an ID: cache %+v, listings %v", s.ID, atts, sbs)
			}
			creating := len(listings(s.ID)) == 0 && netnsPresentOf(atts, s.ID)
			if !creating || !changed {
				continue
			}
			later := false
			for _, o := range p.Sandboxes {
				later = later || o.ID != s.ID && laterOfP(o.ID, createdOf(s.ID))
			}
			if !later {
				t.Fatalf("row %d frees %s, which may be being created, with no sandbox of P known to be created later: cache %+v, listings %v",
					vd.Row, s.ID, atts, sbs)
			}
		}
	})
}

// netnsPresentOf reports whether an entry of the sandbox id in atts has its network namespace there.
func netnsPresentOf(atts []attachment, id string) bool {
	for _, a := range atts {
		if a.ContainerID == id && netnsPresent(a.NetNS) {
			return true
		}
	}
	return false
}
