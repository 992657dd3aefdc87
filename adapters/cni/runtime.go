package cni

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/ports"
)

// podUIDLabel is the label the kubelet puts on every sandbox it creates:
// the pod's UID.
const podUIDLabel = "io.kubernetes.pod.uid"

// Runtime is what the Collector asks the container runtime: its pod
// sandboxes, ready or not, as the CRI lists them. adapters/cri's
// SandboxExtractor has this method, and so has cri-client's
// RuntimeService.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
}

// runtimeView is one answer of the Runtime: the sandboxes it lists, by ID.
// The zero value is "no Runtime": it lists nothing and knows nothing.
type runtimeView struct {
	asked bool
	byID  map[string]*runtimeapi.PodSandbox
	// firstCreated is the earliest CreatedAt of each ID's listings (byID's
	// merged listing has the latest).
	firstCreated map[string]int64
	// runningNoID are the pod UIDs of the sandboxes it lists without an
	// ID and not stopped: each tells that its pod runs (observe), though of
	// no sandbox it names.
	runningNoID map[string]bool
}

// runtimeListTimeout bounds one list of the Runtime's sandboxes (or the
// ResyncInterval, if shorter): a Runtime that hangs fails, and keeps
// everything, rather than stopping Resync.
const runtimeListTimeout = 10 * time.Second

// listRuntime asks the Runtime for every sandbox: one of a pod may carry
// its UID in its metadata and no label (crictl runp), and a filter on the
// label would hide it ready. Without a Runtime it returns the zero view. A
// nil answer lists nothing; a sandbox without an ID lists no sandbox, and,
// unless it is listed NOTREADY, tells that its pod runs (runningNoID): an
// answer that makes no sense only ever keeps. A sandbox listed twice is
// ready unless both say NOTREADY, and created at any of the times told. A
// list takes runtimeListTimeout at most;
// its failure is never permanent (whatever the Runtime says: a runtime that
// cannot be asked keeps everything, until it can), and wraps ctx's error
// when ctx ended.
func (c *Collector) listRuntime(ctx context.Context) (runtimeView, error) {
	if c.runtime == nil {
		return runtimeView{}, nil
	}
	if err := ctx.Err(); err != nil { // not asked: whatever it answers is not waited for
		return runtimeView{}, fmt.Errorf("cni: listing the runtime's sandboxes: not asked: %w", err)
	}
	timeout := min(runtimeListTimeout, c.resync.interval)
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		sbs []*runtimeapi.PodSandbox
		err error
	}
	done := make(chan answer, 1) // a Runtime that ignores its context is left behind, and its answer dropped
	go func() {
		var a answer
		returned := false
		defer func() {
			if !returned { // a panic, whatever its value: a failed list, not a dead process
				a = answer{err: fmt.Errorf("ListPodSandbox panicked: %s", ports.Sprint(recover()))}
			}
			done <- a
		}()
		a.sbs, a.err = c.runtime.ListPodSandbox(lctx, &runtimeapi.PodSandboxFilter{})
		returned = true
	}()
	var sbs []*runtimeapi.PodSandbox
	var err error
	select {
	case a := <-done:
		sbs, err = a.sbs, a.err
	case <-lctx.Done():
		err = fmt.Errorf("no answer within %v", timeout)
	}
	if err != nil {
		if ctx.Err() != nil {
			return runtimeView{}, fmt.Errorf("cni: listing the runtime's sandboxes: %s: %w", ports.Sprint(err), ctx.Err())
		}
		return runtimeView{}, fmt.Errorf("cni: listing the runtime's sandboxes: %s", ports.Sprint(err)) // %s: not its Permanent
	}
	return viewOf(sbs)
}

// viewOf reads the Runtime's answer sbs (listRuntime). An answer that lists a sandbox as two pods', or a running
// sandbox of no ID and no pod, decides nothing: it is a failure. A sandbox listed at two creation times was created
// at either (created).
func viewOf(sbs []*runtimeapi.PodSandbox) (runtimeView, error) {
	v := runtimeView{asked: true, byID: make(map[string]*runtimeapi.PodSandbox, len(sbs)), firstCreated: make(map[string]int64, len(sbs))}
	for _, sb := range sbs {
		if label, meta := sb.GetLabels()[podUIDLabel], sb.GetMetadata().GetUid(); label != "" && meta != "" && label != meta {
			// Its label and its metadata name two pods, with an ID or without: either may run in it, and the answer
			// decides nothing.
			return runtimeView{}, fmt.Errorf("cni: listing the runtime's sandboxes: sandbox %q is two pods' (its label names UID %s, its metadata %s)",
				sb.GetId(), label, meta)
		}
		// A sandbox listed by its ID tells of that ID, whatever its labels say: a runtime that
		// leaves the label out, or ignores the filter, still lists it ready (the others are
		// told from the pod's by the label, in observe).
		if sb.GetId() == "" {
			// A nil sandbox reads, through the getters, as one of no ID and no pod, running: it may be any.
			if podUIDOf(sb) == "" && sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				// Running, of no sandbox and no pod it tells: it may be any, and the answer decides nothing.
				return runtimeView{}, errors.New("cni: listing the runtime's sandboxes: it lists a running sandbox with neither an ID nor a pod")
			}
			if uid := podUIDOf(sb); sb != nil && uid != "" && sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				if v.runningNoID == nil {
					v.runningNoID = map[string]bool{}
				}
				v.runningNoID[uid] = true
			}
			continue
		}
		if prev := v.byID[sb.GetId()]; prev != nil && podUIDOf(prev) != "" && podUIDOf(sb) != "" && podUIDOf(prev) != podUIDOf(sb) {
			// One sandbox of two pods: either may run in it, and the answer decides nothing.
			return runtimeView{}, fmt.Errorf("cni: listing the runtime's sandboxes: it lists sandbox %s as two pods' (UIDs %s and %s)",
				sb.GetId(), podUIDOf(prev), podUIDOf(sb))
		}
		if at, first := sb.GetCreatedAt(), v.firstCreated[sb.GetId()]; at > 0 && (first == 0 || at < first) {
			v.firstCreated[sb.GetId()] = at // listed twice at two times: either may be its creation
		}
		v.byID[sb.GetId()] = merged(v.byID[sb.GetId()], sb)
	}
	return v, nil
}

// merged is what two listings of one sandbox tell together (prev nil: the first): ready if either is not
// listed stopped, and the pod it belongs to from whichever names it (its labels, its metadata), so that a
// pod whose ready sandbox is listed twice, once without the pod's UID, is still told to run.
func merged(prev, sb *runtimeapi.PodSandbox) *runtimeapi.PodSandbox {
	if prev == nil {
		return sb
	}
	m := &runtimeapi.PodSandbox{Id: sb.GetId(), State: prev.GetState(), CreatedAt: max(prev.GetCreatedAt(), sb.GetCreatedAt()),
		Metadata: prev.GetMetadata(), Labels: map[string]string{}}
	if prev.GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		m.State = sb.GetState()
	}
	if m.Metadata.GetUid() == "" {
		m.Metadata = sb.GetMetadata()
	}
	for _, l := range []map[string]string{sb.GetLabels(), prev.GetLabels()} { // prev's first listing wins a clash
		for k, v := range l {
			if v != "" || m.Labels[k] == "" { // a label left empty names nothing: it hides no pod the other names
				m.Labels[k] = v
			}
		}
	}
	return m
}

// created returns when the sandbox id of the pod uid was created, the
// latest and the earliest of the times told: the runtime's CreatedAt where
// it lists the sandbox as that pod's (or as no pod's), otherwise written,
// the time its first cache entry was written (which a restored or copied
// cache does not keep). A listing of another pod tells nothing of when a
// sandbox of uid was created.
func (v runtimeView) created(id, uid string, written time.Time) (latest, earliest time.Time) {
	if sb, ok := v.byID[id]; ok && sb.GetCreatedAt() > 0 && (podUIDOf(sb) == "" || podUIDOf(sb) == uid) {
		return time.Unix(0, sb.GetCreatedAt()), time.Unix(0, v.firstCreated[id])
	}
	return written, written
}

// isReady reports whether the runtime lists the sandbox id ready.
func (v runtimeView) isReady(id string) bool {
	// A nil sandbox's state reads as SANDBOX_READY, which is 0.
	sb, ok := v.byID[id]
	return ok && sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
}

// facts returns what the Runtime tells of the sandbox id, for decide.
func (v runtimeView) facts(id string) sandboxFacts {
	sb, listed := v.byID[id]
	// A state the runtime names but CRI does not (neither ready nor not ready) is no evidence that it stopped.
	ready := v.isReady(id) || listed && sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return sandboxFacts{ID: id, Listed: listed, Ready: ready}
}

// Errors of DestroyPU that keep the attachments of a sandbox the runtime
// still runs, or whose place among its pod's sandboxes cannot be told.
var (
	// ErrSandboxRunning: DestroyPU was asked to free a pod (gone from the
	// API, recreated, bound elsewhere, finished) of which the Runtime
	// still lists a ready sandbox, or may be creating one (the package doc,
	// "When a sandbox may be freed"). Nothing is freed; the error is a plain
	// one, so that the engine checks the pod again with backoff, and frees
	// it once the runtime no longer runs it.
	ErrSandboxRunning = errors.New("cni: the runtime still runs a ready sandbox of the pod, or may be creating one")
	// ErrOrderUnknown: DestroyPU refused to free a sandbox of a live pod
	// (ErrNewestSandbox) for longer than Options.NewestSandboxTimeout. It
	// is wrapped with ports.Permanent: the engine drops the PU, and this
	// Collector no longer lists that sandbox (ListPUs skips it, logged
	// once) until the Collector is made anew; its attachments are kept for
	// an operator to look at (row 8 of the table), until its pod is gone:
	// then the rows of a gone pod decide them with the pod's others.
	ErrOrderUnknown = errors.New("cni: the sandbox's place among its pod's sandboxes cannot be told")
	// ErrNoEvidence: DestroyPU was asked to free a gone pod (gone from the
	// API, recreated, bound elsewhere, finished) by a Collector without
	// Options.Runtime, and the network namespace of a sandbox of the pod is
	// not known to be gone: nothing but the API's answer says that sandbox
	// is dead (the package doc, "When a sandbox may be freed"). It is kept,
	// the others freed; the error is a plain one, so that the engine checks
	// the pod again with backoff, and frees it once its namespace is gone.
	ErrNoEvidence = errors.New("cni: without a Runtime, nothing tells that the sandbox is dead")
)

// liveNetNS returns path when it names a sandbox's network namespace
// reliably: a bind-mounted nsfs file (statfs NSFS_MAGIC) outside /proc, as
// containerd and CRI-O pin one under /run/netns, and not a symbolic link.
// A /proc/<pid>/ns/net path, or a link to one (ip netns users make them),
// names whatever namespace the process of that PID is in now: once the
// PID is reused, an unrelated live one, whose interfaces a DEL would
// delete. Any other path, or one that is gone, gives "": the spec has the
// plugins release what they hold without a namespace.
//
// A path that is not clean, or that the system would follow through /proc
// (throughProc), gives "" too: what it checks is not what a plugin opens.
func liveNetNS(path string) string {
	if path == "" || !filepath.IsAbs(path) || path != filepath.Clean(path) || throughProc(path) {
		return ""
	}
	resolved, err := resolveDir(path)
	if err != nil || underProc(resolved) {
		return ""
	}
	var fi unix.Stat_t
	if err := unix.Lstat(resolved, &fi); err != nil || fi.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ""
	}
	var st unix.Statfs_t
	if err := unix.Statfs(resolved, &st); err != nil || st.Type != unix.NSFS_MAGIC {
		return ""
	}
	return path
}

// resolveDir returns path with the symbolic links of its directory
// resolved (/var/run/netns/x is /run/netns/x), and its last element as it
// is: /proc/<pid>/ns/net is a link that resolves to no path.
func resolveDir(path string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(filepath.Clean(path)))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(path)), nil
}

// throughProc reports whether the system, opening the absolute path, may
// follow a symbolic link into /proc on its way, at any step: a link whose
// target is in /proc, /proc/<pid>/root among them, which the system follows
// into that process's mount namespace while filepath.EvalSymlinks reads it as
// the link it shows; or a path it cannot follow step by step (too many links,
// a link it cannot read). What such a path names for a plugin, the collector
// cannot see. A step that is not there ends the walk: the system fails there
// too.
func throughProc(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	rest := strings.Split(path, "/")
	cur, hops := "/", 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur is resolved: its parent is the system's ".."
			continue
		}
		next := filepath.Join(cur, c)
		if underProc(next) {
			return true
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return true
		}
		target, err := os.Readlink(next)
		if err != nil {
			return true
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return false
}

// underProc reports whether the absolute, resolved path is in /proc.
func underProc(path string) bool { return path == "/proc" || strings.HasPrefix(path, "/proc/") }

// netnsGone reports whether the network namespace an attachment was added
// with is gone for sure: its directory is there and the path is not (the
// runtime removes it with the sandbox; a reboot empties /run). A directory
// this process does not see (not mounted into its container) says nothing,
// nor does a file that is there but no namespace (its bind mount may be one
// this process does not see), nor "", nor a path in /proc: the collector's
// container may not share the host's PID namespace (a DaemonSet without
// hostPID), where a live sandbox's /proc/<pid> is not there.
//
// A path that is not clean (a "..", a ".", a "//" or a trailing "/" in it:
// no runtime writes one) says nothing either: the system reads ".." after
// the link before it, so that its text, cleaned, may name another file
// than the one the path opens.
func netnsGone(path string) bool {
	if path == "" || !filepath.IsAbs(path) || path != filepath.Clean(path) || underProc(path) || throughProc(path) {
		return false
	}
	resolved, err := resolveDir(path)
	if err != nil || underProc(resolved) {
		return false
	}
	var fi unix.Stat_t
	return errors.Is(unix.Lstat(resolved, &fi), fs.ErrNotExist)
}

// netnsPresent reports whether the network namespace path an attachment
// was added with is still there, namespace or not, link or not: a sandbox
// being created has it (a runtime that pins namespaces makes it before
// ADD; one that caches /proc/<pid>/ns/net has the process, which, from a
// PID namespace of its own, may be another: it errs toward keeping).
func netnsPresent(path string) bool {
	if path == "" || !filepath.IsAbs(path) {
		return false
	}
	var fi unix.Stat_t
	if path != filepath.Clean(path) { // read as the system reads it (netnsGone)
		return unix.Lstat(path, &fi) == nil
	}
	if !underProc(path) && throughProc(path) { // what the runtime sees there, the collector cannot: it errs toward keeping
		return true
	}
	resolved, err := resolveDir(path)
	if err != nil {
		return false
	}
	return unix.Lstat(resolved, &fi) == nil
}
