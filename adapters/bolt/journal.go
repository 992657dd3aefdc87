package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"k8s.io/klog/v2"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/internal/pathkind"
	"github.com/podsweeper/podsweeper/ports"
)

// Errors returned by Open and ListPUs. Match them with errors.Is.
var (
	// ErrNotJournal: the file exists but is not a journal Open can read: a
	// random file, another bbolt database, a journal damaged or truncated.
	// The file is left as it is.
	ErrNotJournal = errors.New("bolt: not a podsweeper journal")
	// ErrUnsupportedVersion: the file is a journal of a newer format than
	// this build reads (an agent rolled back). The file is left as it is.
	ErrUnsupportedVersion = errors.New("bolt: unsupported journal version")
	// ErrLocked: another process (or another Journal of this one) holds the
	// file, and did not let go within Options.Timeout.
	ErrLocked = errors.New("bolt: journal locked by another process")
	// ErrInvalidOptions: an Options field is out of range, or the path
	// given Open cannot be a journal: empty, in a directory that does not
	// exist, or naming something that is not a regular file (a directory).
	ErrInvalidOptions = errors.New("bolt: invalid options")
	// ErrClosed: the Journal was closed.
	ErrClosed = errors.New("bolt: journal closed")
)

// Defaults of the Options fields left at their zero value.
const (
	DefaultTimeout    = time.Second
	DefaultBatchDelay = time.Millisecond
)

// Options configure Open. The zero value of every field is a documented default.
type Options struct {
	// Timeout bounds the wait for the file's lock, held by another agent
	// (a previous one still shutting down, say); Open then fails with
	// ErrLocked. 0: DefaultTimeout (1s). Negative values are invalid.
	Timeout time.Duration
	// BatchDelay is how long a write waits for others to join its commit
	// (bbolt's DB.MaxBatchDelay): Tracks that arrive within it share one
	// fsync. It is added to the cost of a lone Track. Much shorter, and
	// batches alternate between a few writes and many: 16 Tracks at once
	// took 0.23 to 0.48 commits each at 250µs, 0.07 at 1ms, the same as
	// at 10ms (BENCHMARKS.md). 0: DefaultBatchDelay (1ms; bbolt's own
	// default is 10ms). Negative values are invalid.
	BatchDelay time.Duration
	// Logger receives the writes that failed (Observe cannot return an
	// error) and the events refused as nonsense. A Logger without a sink
	// (the zero value, and logr.Discard(), which is the same value) logs
	// through klog (klog.Background()), as the engine does, so that a PU
	// missing from the journal is never silent. To silence it, pass a
	// logger whose sink drops everything.
	Logger logr.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Timeout < 0 {
		return o, fmt.Errorf("%w: Timeout is negative (%v)", ErrInvalidOptions, o.Timeout)
	}
	if o.BatchDelay < 0 {
		return o, fmt.Errorf("%w: BatchDelay is negative (%v)", ErrInvalidOptions, o.BatchDelay)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.BatchDelay == 0 {
		o.BatchDelay = DefaultBatchDelay
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o, nil
}

// Journal records the PUs an engine tracks in a bbolt file and lists them
// again after a restart. Create it with Open; its methods are safe from any
// goroutine.
type Journal struct {
	db   *bbolt.DB
	path string
	log  logr.Logger
	// failures counts the events Observe could not record.
	failures atomic.Uint64
	closed   atomic.Bool
}

var (
	_ ports.Inventory   = (*Journal)(nil)
	_ deletion.Observer = (*Journal)(nil)
)

// Open opens the journal at path, creating it when the file does not exist.
// The directory must exist (for a path that is a symbolic link to no file,
// the directory the link points into): Open does not create it, so that a missing
// mount (a hostPath the DaemonSet does not mount, a typo) fails at start
// instead of keeping the journal where it does not survive a restart. The
// error then wraps ErrInvalidOptions, as for an empty path, or a path that
// names a directory, a loop of links, or anything else than a regular
// file: a program
// refuses its command line with it.
//
// An existing file is read first without writing to it: when it is not a
// journal this build can use (another format, another bbolt database, a
// damaged or truncated journal, a newer version), Open returns an error
// wrapping ErrNotJournal or ErrUnsupportedVersion and leaves the file
// untouched. An empty file, or a bbolt file without a single bucket (a
// journal whose creation was cut short), holds nothing and is made a
// journal. When another process holds the file, Open waits up to
// opts.Timeout and returns an error wrapping ErrLocked.
func Open(path string, opts Options) (*Journal, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: the path is empty", ErrInvalidOptions)
	}
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.Timeout)
	kind, info, err := pathkind.Of(path)
	created := kind == pathkind.Missing || kind == pathkind.Dangling
	// The name a missing journal is created under: path, or where the
	// link path is (a dangling one) points.
	file := path
	switch {
	case created:
		if file, err = linkTarget(path); err != nil {
			return nil, err
		}
		if err := checkDir(filepath.Dir(file)); err != nil {
			return nil, err
		}
	case kind == pathkind.Loop:
		// A loop of links is there and names no file, for any process: the path given Open is the cause.
		return nil, fmt.Errorf("%w: the journal %s names no file: %w", ErrInvalidOptions, path, err)
	case err != nil:
		return nil, fmt.Errorf("bolt: journal %s: %w", path, err)
	case kind != pathkind.File:
		// A directory (the journal's own, a slip of the path) or a device is no file a journal can be: the path
		// given Open is the cause, as for a missing directory.
		return nil, fmt.Errorf("%w: the journal %s is a %v, not a regular file", ErrInvalidOptions, path, info.Mode().Type())
	case err == nil && info.Size() > 0:
		// Read it without the right to write first: bbolt's read-write
		// Open may write to a file it accepts (its free list), and one
		// that is not ours must stay as it is.
		if err := inspect(path, time.Until(deadline)); err != nil {
			return nil, err
		}
	}
	db, err := openDB(path, false, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	if err := prepare(db, path); err != nil {
		_ = db.Close()
		return nil, err
	}
	if created {
		// The file's name must survive a reboot, not only its content.
		if err := syncDir(filepath.Dir(file)); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	db.MaxBatchDelay = o.BatchDelay
	return &Journal{db: db, path: path, log: o.Logger.WithValues("journal", path)}, nil
}

// checkDir fails unless dir is an existing directory, with an error
// wrapping ErrInvalidOptions: the path given Open is the cause.
func checkDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: the journal's directory %s (it is not created: mount it or create it first): %w", ErrInvalidOptions, dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: the journal's directory %s is not a directory", ErrInvalidOptions, dir)
	}
	return nil
}

// maxLinks bounds the links linkTarget follows, as the kernel does (ELOOP).
const maxLinks = 40

// linkTarget returns the name a file created at path, which does not
// exist, is created under: path itself, or the end of the chain of
// symbolic links path starts (a dangling one), so that its directory is
// the one checked.
func linkTarget(path string) (string, error) {
	for range maxLinks {
		info, err := os.Lstat(path)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			return path, nil // what is missing, or no link: created (or refused) at path
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("bolt: journal %s: %w", path, err)
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%w: the journal %s: too many levels of symbolic links", ErrInvalidOptions, path)
}

// openDB opens the bbolt file, waiting up to timeout for its lock. A panic
// of bbolt on a damaged file, or a fault reading it, becomes an error.
func openDB(path string, readOnly bool, timeout time.Duration) (db *bbolt.DB, err error) {
	err = safely(func() error {
		var err error
		// bbolt waits forever with a zero Timeout: never pass it one.
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: max(timeout, time.Millisecond), ReadOnly: readOnly})
		return err
	})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s: %w", ErrLocked, path, err)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("bolt: journal %s: %w", path, err)
	default:
		return nil, fmt.Errorf("%w: %s: %w", ErrNotJournal, path, err)
	}
}

// inspect checks, read-only, that the file at path is a journal this build
// can use, every record included, or a blank bbolt file.
func inspect(path string, timeout time.Duration) error {
	db, err := openDB(path, true, timeout)
	if err != nil {
		return err
	}
	defer db.Close()
	err = safely(func() error {
		return db.View(func(tx *bbolt.Tx) error {
			if size, err := fileSize(path); err != nil {
				return err
			} else if size < tx.Size() {
				// Pages past the end of the file: reading them would fault.
				return fmt.Errorf("truncated: %d bytes, its pages need %d", size, tx.Size())
			}
			_, err := checkFormat(tx, true)
			return err
		})
	})
	if err != nil {
		return wrapNotJournal(path, err)
	}
	return nil
}

// prepare checks the marker of the file db holds, now under its exclusive
// lock, and writes the format into a blank file.
func prepare(db *bbolt.DB, path string) error {
	var state fileState
	err := safely(func() error {
		return db.View(func(tx *bbolt.Tx) error {
			var err error
			state, err = checkFormat(tx, false)
			return err
		})
	})
	if err == nil && state == stateBlank {
		err = db.Update(initFormat)
	}
	if err != nil {
		return wrapNotJournal(path, err)
	}
	return nil
}

// wrapNotJournal marks err, about the file at path, with ErrNotJournal or
// ErrUnsupportedVersion.
func wrapNotJournal(path string, err error) error {
	if errors.Is(err, errNewerVersion) {
		return fmt.Errorf("%w: %s: %w", ErrUnsupportedVersion, path, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrNotJournal, path, err)
}

func fileSize(path string) (int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("bolt: syncing the journal's directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("bolt: syncing the journal's directory %s: %w", dir, err)
	}
	return nil
}

// safely runs f, turning a panic, or a fault reading a mapped file (a file
// truncated under bbolt, say), into an error.
func safely(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading it panicked: %v", r)
		}
	}()
	return f()
}

// Close closes the file and lets go of its lock. Observe calls after it are
// logged and counted as failures; ListPUs fails with ErrClosed. A second
// Close returns nil.
func (j *Journal) Close() error {
	if j.closed.Swap(true) {
		return nil
	}
	if err := j.db.Close(); err != nil {
		return fmt.Errorf("bolt: closing journal %s: %w", j.path, err)
	}
	return nil
}

// Path returns the file the journal is kept in.
func (j *Journal) Path() string { return j.path }

// Failures returns how many events Observe could not record: failed
// writes, events about a PU without a PUID, pod name or namespace, events
// after Close. Each is logged at error level too.
func (j *Journal) Failures() uint64 { return j.failures.Load() }

// ListPUs returns every PU in the journal, sorted by PUID.
func (j *Journal) ListPUs(ctx context.Context) ([]ports.PU, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: listing journal %s: %w", j.path, err)
	}
	if j.closed.Load() {
		return nil, fmt.Errorf("%w: %s", ErrClosed, j.path)
	}
	var out []ports.PU
	err := j.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPUs)
		if b == nil {
			return fmt.Errorf("%w: the bucket %q is gone", ErrNotJournal, bucketPUs)
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(out)%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			pu, err := decodeRecord(k, v)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrNotJournal, err)
			}
			out = append(out, pu)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			err = fmt.Errorf("%w: %w", ErrClosed, err)
		}
		return nil, fmt.Errorf("bolt: listing journal %s: %w", j.path, err)
	}
	return out, nil
}

// Observe records what ev says about a PU:
//
//   - EventTracked writes the PU, and returns once the write is committed
//     to disk, so that a PU is durable when Track returns; a record that is
//     the same already costs a read, no write (a restore re-tracks every PU),
//     and so does a PU tracked without a sandbox whose record has one for
//     the same pod (a pod informer's add after a restart: the record keeps
//     the sandbox the engine's restore needs to see a sandbox replaced
//     while the agent was down);
//   - EventAdopted writes the sandbox the engine recorded for a PU the
//     journal holds, one told IfNone only where it holds none (the
//     sandbox from before a restart stays); it never brings back a PU the
//     journal forgot;
//   - EventDestroyed, EventAbandoned and EventUntracked forget the PU,
//     unless its record has been replaced meanwhile by a Track for another
//     pod or sandbox (a PU re-created under the same PUID; ports.PU.SameAs:
//     an empty sandbox is no other);
//   - every other kind is ignored.
//
// Observe cannot return an error: a write that fails (or an event without a
// PUID, pod name or namespace) is logged at error level through
// Options.Logger and counted in Failures, and the engine goes on. The PU
// stays tracked in memory; what the journal misses is a PU not restored
// after the next restart.
func (j *Journal) Observe(ev deletion.Event) {
	switch ev.Kind {
	case deletion.EventTracked:
		j.record(ev, j.put(ev.PU, true, false))
	case deletion.EventAdopted:
		j.record(ev, j.put(ev.PU, false, ev.IfNone))
	case deletion.EventDestroyed, deletion.EventAbandoned, deletion.EventUntracked:
		j.record(ev, j.forget(ev.PU))
	}
}

// record logs and counts err, if any.
func (j *Journal) record(ev deletion.Event, err error) {
	if err == nil {
		return
	}
	j.failures.Add(1)
	j.log.Error(err, "the journal could not record an event; the PU is tracked, but a restart would not know of it as it is now",
		"event", ev.Kind.String(), "puID", ev.PU.PUID, "pod", ev.PU.Pod.String(), "sandboxID", ev.PU.SandboxID)
}

var errInvalidPU = errors.New("bolt: a PU without a PUID, pod name or namespace")

func validPU(pu ports.PU) error {
	if pu.PUID == "" || pu.Pod.Name == "" || pu.Pod.Namespace == "" {
		return fmt.Errorf("%w: PUID %q, pod %q", errInvalidPU, pu.PUID, pu.Pod)
	}
	return nil
}

// put writes pu, unless the same record is there already. With insert
// false, only a PU the journal holds is written.
func (j *Journal) put(pu ports.PU, insert, ifNone bool) error {
	if err := validPU(pu); err != nil {
		return err
	}
	key, val := []byte(pu.PUID), encodeRecord(pu)
	same := func(b *bbolt.Bucket) bool {
		old := b.Get(key)
		switch {
		case bytes.Equal(old, val):
			return true
		case old == nil:
			return !insert
		}
		// A Track without a sandbox keeps the sandbox recorded for the same
		// PU (ports.PU.WithRecordedSandbox): the restore gives it to the
		// engine's record, and it is how a sandbox replaced while the agent
		// was down is seen.
		rec, err := decodeRecord(key, old)
		if err == nil && ifNone && rec.SandboxID != "" {
			return true // the sandbox from before a restart stays, for Start's list to give
		}
		return err == nil && pu.WithRecordedSandbox(rec) == rec
	}
	var skip bool
	if err := j.view(func(b *bbolt.Bucket) { skip = same(b) }); err != nil {
		return err
	}
	if skip {
		return nil
	}
	return j.batch(func(b *bbolt.Bucket) error {
		if same(b) {
			return nil
		}
		return b.Put(key, val)
	})
}

// forget deletes the record of pu, if it is still the one the event is
// about: the same pod, and the same sandbox or none recorded.
func (j *Journal) forget(pu ports.PU) error {
	if err := validPU(pu); err != nil {
		return err
	}
	key := []byte(pu.PUID)
	ours := func(b *bbolt.Bucket) bool {
		old := b.Get(key)
		if old == nil {
			return false
		}
		rec, err := decodeRecord(key, old)
		return err != nil || pu.SameAs(rec)
	}
	var found bool
	if err := j.view(func(b *bbolt.Bucket) { found = ours(b) }); err != nil {
		return err
	}
	if !found {
		return nil
	}
	return j.batch(func(b *bbolt.Bucket) error {
		if !ours(b) {
			return nil
		}
		return b.Delete(key)
	})
}

// view runs f on the bucket of records in a read transaction.
func (j *Journal) view(f func(*bbolt.Bucket)) error {
	if j.closed.Load() {
		return fmt.Errorf("%w: %s", ErrClosed, j.path)
	}
	err := j.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPUs)
		if b == nil {
			return fmt.Errorf("%w: the bucket %q is gone", ErrNotJournal, bucketPUs)
		}
		f(b)
		return nil
	})
	if err != nil {
		return fmt.Errorf("bolt: reading journal %s: %w", j.path, err)
	}
	return nil
}

// batch runs f on the bucket of records in a write transaction shared with
// the writes of other goroutines, and returns once it is committed.
func (j *Journal) batch(f func(*bbolt.Bucket) error) error {
	err := j.db.Batch(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPUs)
		if b == nil {
			return fmt.Errorf("%w: the bucket %q is gone", ErrNotJournal, bucketPUs)
		}
		return f(b)
	})
	if err != nil {
		return fmt.Errorf("bolt: writing journal %s: %w", j.path, err)
	}
	return nil
}
