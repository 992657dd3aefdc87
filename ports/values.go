package ports

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// ErrPodNotFound is returned (possibly wrapped) by a PodGetter when the pod
// does not exist. Match it with errors.Is.
var ErrPodNotFound = errors.New("pod not found")

// PU is a processing unit as the engine knows it: the pod it was created
// for and the sandbox it belongs to.
type PU struct {
	// PUID is the UID of the pod the PU was created for. It identifies the PU.
	PUID string
	// Pod is where the pod lived.
	Pod types.NamespacedName
	// SandboxID is the sandbox the PU belongs to; "" until one is known.
	SandboxID string
}

// WithRecordedSandbox returns pu as it stands once what was recorded of
// the same PU is taken into account: when pu has no sandbox and recorded is
// the same PU (same PUID and pod) with one, pu with recorded's sandbox;
// otherwise pu as it is. It is the one rule by which a PU seen without a
// sandbox (a pod informer's add after a restart) keeps the sandbox a
// journal or an Inventory recorded for it, so that a sandbox replaced while
// the agent was down is still seen as replaced.
func (pu PU) WithRecordedSandbox(recorded PU) PU {
	if pu.SandboxID == "" && recorded.SandboxID != "" && recorded.PUID == pu.PUID && recorded.Pod == pu.Pod {
		pu.SandboxID = recorded.SandboxID
	}
	return pu
}

// SameAs reports whether pu is the PU recorded as recorded: the same PUID
// and pod, and the same sandbox, an empty one being no other (a PU tracked
// without a sandbox keeps the one recorded, WithRecordedSandbox). It is the
// one rule by which a journal or an Inventory forgets its record of a PU the
// engine destroyed, gave up on or untracked: not when the record was
// replaced meanwhile by a PU of the same PUID for another pod or sandbox,
// but also when the engine, which tracked the PU without its sandbox, never
// learnt the one recorded.
func (pu PU) SameAs(recorded PU) bool {
	return pu.PUID == recorded.PUID && pu.Pod == recorded.Pod &&
		(pu.SandboxID == recorded.SandboxID || pu.SandboxID == "" || recorded.SandboxID == "")
}

// DestroyEvent tells a PolicyHandler which PU to destroy and why.
type DestroyEvent struct {
	PUID      string               // the pod UID the PU was created for
	Pod       types.NamespacedName // where the pod lived
	SandboxID string               // the sandbox recorded for this PU ("" if never known)
	Reason    Reason
}

// PU returns the PU ev destroys.
func (ev DestroyEvent) PU() PU { return PU{PUID: ev.PUID, Pod: ev.Pod, SandboxID: ev.SandboxID} }

// String returns a short human-readable form of ev, for logs.
func (ev DestroyEvent) String() string {
	return fmt.Sprintf("destroy PU %s of pod %s (sandbox %q): %s", ev.PUID, ev.Pod, ev.SandboxID, ev.Reason)
}

// Reason says why a PU is destroyed.
type Reason string

const (
	// ReasonPodGone: the API server says the pod does not exist.
	ReasonPodGone Reason = "PodGone"
	// ReasonUIDChanged: a pod of the same name exists, but it is a new pod
	// (another UID); the PU belonged to the old one.
	ReasonUIDChanged Reason = "UIDChanged"
	// ReasonNodeChanged: the pod of that name is bound to another node.
	ReasonNodeChanged Reason = "NodeChanged"
	// ReasonSandboxChanged: the pod is the same, but its sandbox was
	// replaced; the PU belonged to the old sandbox.
	ReasonSandboxChanged Reason = "SandboxChanged"
	// ReasonPodTerminated: the pod is the same, but it has finished (phase
	// Succeeded or Failed) and keeps its object only for its logs and status.
	// Only reported when the engine's DestroyTerminated option is set.
	ReasonPodTerminated Reason = "PodTerminated"
	// ReasonSandboxDead: the pod is the same and runs in no sandbox yet, but
	// the sandbox the PU belongs to is dead (a SandboxProber says so): the
	// pod waits for a new one. Only reported with a SandboxProber.
	ReasonSandboxDead Reason = "SandboxDead"
)

// Reasons lists every Reason: first those of the pod (gone, moved, recreated, finished: rows 1, 3, 4 and 11 of the
// decision table), then those of its sandbox (replaced, dead: rows 10 and 12).
func Reasons() []Reason {
	return []Reason{ReasonPodGone, ReasonNodeChanged, ReasonUIDChanged, ReasonPodTerminated, ReasonSandboxChanged, ReasonSandboxDead}
}

// permanentError marks an error as not worth retrying.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks a DestroyPU error as not worth retrying: the engine drops
// the PU at once instead of trying again. The original error stays reachable
// through errors.Is and errors.As. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps, was marked with
// Permanent. An error that cannot be read (Readable is false) is not. err is
// read once (Match).
func IsPermanent(err error) bool {
	return Match(err, MarkedPermanent)
}

// MarkedPermanent reports whether err itself, not an error it wraps, was made by Permanent: the test IsPermanent
// makes of each error of a tree, for a caller that reads a tree once with Match and asks it more than one question.
func MarkedPermanent(err error) bool {
	p, ok := err.(*permanentError)
	return ok && p != nil
}

// maxErrorNodes bounds how many errors Readable reads in one error's tree: more than any real wrapping, and a tree
// that repeats a child (errors.Join(e, e) nested) or loops never ends.
const maxErrorNodes = 256

// Readable reports whether a port's error can be read: err is nil, or it and every error it wraps (through Unwrap()
// error and Unwrap() []error, at most 256 errors in all) are neither a nil pointer, map, slice, func or chan held in
// the interface (a typed nil) nor panic when asked Error or Unwrap. An error that cannot be read says nothing the
// engine may act on, whatever its Is, As and Unwrap answer: the engine takes it as a plain failure, so that it keeps
// the PU (GetPod) or retries (DestroyPU), and never walks it with errors.Is.
func Readable(err error) bool {
	return walk(err, nil, nil)
}

// Sprint returns what v, a port's error or the value a port panicked with, says, read as the engine reads a port's
// error, so that printing it always ends and never panics: an error is its message if it can be read (Readable) and
// its Error does not panic, else it is named by its type; a string, a bool or a number is itself; any other value is
// named by its type alone, for printing it would run its methods (a struct holding an error that wraps itself
// overflows the stack of fmt.Sprint, which no recover catches). Sprint(nil) is "nil".
func Sprint(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("a %T, whose printing panics", v)
		}
	}()
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return x
	case error:
		if !Readable(x) {
			return fmt.Sprintf("a %T that cannot be read", v)
		}
		return x.Error()
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.String:
		return r.String()
	case reflect.Bool:
		return strconv.FormatBool(r.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(r.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(r.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(r.Float(), 'g', -1, 64)
	case reflect.Complex64, reflect.Complex128:
		return strconv.FormatComplex(r.Complex(), 'g', -1, 128)
	}
	return fmt.Sprintf("a %T", v)
}

// Match reports whether err can be read (Readable) and holds an error for which match is true. err's tree is walked
// once: each error in it is asked Unwrap once and given to match once, one met twice (errors.Join(e, e)) too when its
// type can be compared, so that the answer is what one reading of err says, whatever its errors answer the next time
// (an Unwrap that gives a typed nil from its third call on, say). match
// is called only when err can be read, once the whole tree has been read; a match that panics matches nothing.
// Match(nil, match) is false. IsPermanent reads an error so, and the engine's
// deletion.IsNotFound.
func Match(err error, match func(error) bool) (matched bool) {
	return err != nil && walk(err, nil, func(e error) {
		defer func() { _ = recover() }()
		matched = matched || match(e)
	}) && matched
}

// Snapshot reads err once, as Match does, and returns a copy of what that reading said, which answers the same
// whatever err's errors answer the next time: its Error is the message read then, its Unwrap gives the copies of the
// errors err wrapped then (Unwrap() error or Unwrap() []error, as err's), and errors.Is and errors.As find in it what
// that reading held: each copy is Is a target its error equals or whose own Is method says so, and As a target its
// error can be assigned to or whose own As method fills (a method that panics says no); neither reads the chain of
// its error again; Match, and so the engine, gives its match the errors the copies are of. It returns nil when err is
// nil or cannot be read (Readable). Give it to code of your own that must decide on a port's error once (a predicate
// of yours, as adapters/trireme.TreatAsDestroyed does).
func Snapshot(err error) error {
	var r reading
	if err == nil || !walk(err, &r, nil) {
		return nil
	}
	// Every copy is made first, then given its children: a child may have been met before its parent (a tree that
	// holds one error twice).
	copies := make([]error, len(r.nodes))
	for i, e := range r.nodes {
		s := &snapshot{err: e, msg: r.msgs[i]}
		switch r.kinds[i] {
		case unwrapsOne:
			copies[i] = &snapshotOne{snapshot: s}
		case unwrapsMany:
			copies[i] = &snapshotMany{snapshot: s}
		default:
			copies[i] = s
		}
	}
	for i := range r.nodes {
		kids := r.kids[r.spans[i][0]:r.spans[i][1]]
		switch c := copies[i].(type) {
		case *snapshotOne:
			if len(kids) == 1 {
				c.kid = copies[kids[0]]
			}
		case *snapshotMany:
			for _, k := range kids {
				c.kids = append(c.kids, copies[k])
			}
		}
	}
	return copies[0]
}

// snapshotOf returns the error e is Snapshot's copy of, or e: Match gives match the errors a copy is of, so that
// what a match tells of an error (its type, its methods) it tells of a copy of it.
func snapshotOf(e error) error {
	switch s := e.(type) {
	case *snapshot:
		return s.err
	case *snapshotOne:
		return s.err
	case *snapshotMany:
		return s.err
	}
	return e
}

// snapshot is Snapshot's copy of one error of a tree: the error, and its message as read.
type snapshot struct {
	err error
	msg string
}

func (s *snapshot) Error() string { return s.msg }

// Is reports whether the error the copy is of equals target, or says so itself.
func (s *snapshot) Is(target error) (is bool) {
	defer func() {
		if recover() != nil {
			is = false
		}
	}()
	if same(s.err, target) {
		return true
	}
	x, ok := s.err.(interface{ Is(error) bool })
	return ok && x.Is(target)
}

// As sets target to the error the copy is of, when it can be assigned, or asks that error's own As.
func (s *snapshot) As(target any) (as bool) {
	defer func() {
		if recover() != nil {
			as = false
		}
	}()
	if t := reflect.ValueOf(target); t.Kind() == reflect.Pointer && !t.IsNil() && reflect.TypeOf(s.err).AssignableTo(t.Elem().Type()) {
		t.Elem().Set(reflect.ValueOf(s.err))
		return true
	}
	x, ok := s.err.(interface{ As(any) bool })
	return ok && x.As(target)
}

// snapshotOne is the copy of an error that has Unwrap() error.
type snapshotOne struct {
	*snapshot
	kid error
}

func (s *snapshotOne) Unwrap() error { return s.kid }

// snapshotMany is the copy of an error that has Unwrap() []error.
type snapshotMany struct {
	*snapshot
	kids []error
}

func (s *snapshotMany) Unwrap() []error { return s.kids }

// reading is what walk read of a tree, for Snapshot: the distinct errors, their children (kids[spans[i][0]:spans[i][1]]
// are nodes[i]'s, as indices into nodes), how each unwraps, and each one's message.
type reading struct {
	nodes []error
	kids  []int
	spans [][2]int
	kinds []unwraps
	msgs  []string
}

// unwraps is how an error gives its children.
type unwraps uint8

const (
	unwrapsNone unwraps = iota
	unwrapsOne
	unwrapsMany
)

// walk is Readable, gives visit (when not nil) each error of err's tree as it reads it, in one walk, and records in r
// (when not nil) what it read.
func walk(err error, r *reading, visit func(error)) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if err == nil {
		return true
	}
	// The tree is read breadth first through Unwrap, reading no Error; an error met again (errors.Join(e, e), or one
	// that wraps an error met before) is not asked Unwrap again. The distinct errors are gathered in nodes (on the
	// stack for a small tree: Decide reads every GetPod error through here), then the tree is counted on what was
	// read, and each error's Error is read once, when the tree is known to be small: an Error that walks a huge one
	// would not end.
	var smallNodes [8]error
	var smallKids [8]int
	var smallSpans [8][2]int
	nodes := append(smallNodes[:0], err) // the distinct errors, in the order first met
	kids := smallKids[:0]                // their children (indices into nodes), as first read, node after node
	spans := smallSpans[:0]              // nodes[i]'s children are kids[spans[i][0]:spans[i][1]]
	for i := 0; i < len(nodes); i++ {
		if typedNil(nodes[i]) {
			return false
		}
		from := len(kids)
		add := func(e error) bool {
			if e == nil {
				return true
			}
			j := indexOf(nodes, e)
			if j < 0 {
				if len(nodes) == maxErrorNodes {
					return false
				}
				nodes, j = append(nodes, e), len(nodes)
			}
			kids = append(kids, j)
			return true
		}
		kind := unwrapsNone
		switch u := nodes[i].(type) {
		case interface{ Unwrap() error }:
			kind = unwrapsOne
			if !add(u.Unwrap()) {
				return false
			}
		case interface{ Unwrap() []error }:
			kind = unwrapsMany
			for _, e := range u.Unwrap() {
				if !add(e) {
					return false
				}
			}
		}
		if r != nil {
			r.kinds = append(r.kinds, kind)
		}
		spans = append(spans, [2]int{from, len(kids)})
	}
	// The tree counts each error as often as it holds it: a loop, or errors.Join(e, e) nested 60 times, is too big.
	var smallStack [8]int
	stack, count := append(smallStack[:0], 0), 0
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if count++; count > maxErrorNodes {
			return false
		}
		stack = append(stack, kids[spans[n][0]:spans[n][1]]...)
	}
	for _, e := range nodes {
		msg := e.Error()
		if r != nil {
			r.msgs = append(r.msgs, msg)
		}
	}
	if r != nil {
		r.nodes, r.kids, r.spans = append(r.nodes, nodes...), append(r.kids, kids...), append(r.spans, spans...)
	}
	if visit != nil {
		for _, e := range nodes {
			visit(snapshotOf(e))
		}
	}
	return true
}

// indexOf returns the index in nodes of the error e is, or -1: an error is met again when it is equal (==) to one met
// before; one whose type cannot be compared is always new.
func indexOf(nodes []error, e error) int {
	for i, n := range nodes {
		if same(n, e) {
			return i
		}
	}
	return -1
}

// same reports whether a and b are one error: equal, and of a type that can be compared.
func same(a, b error) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}

// IsNil reports whether v is nil or holds a nil pointer, map, slice, func, chan or interface (a typed nil): what the
// engine (deletion.New) and the adapters take for a port not given.
func IsNil(v any) bool { return v == nil || typedNil(v) }

// typedNil reports whether v holds a nil pointer, map, slice, func or chan.
func typedNil(v any) bool {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
