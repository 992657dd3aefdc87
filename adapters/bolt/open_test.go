package bolt

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// journalWith writes a journal of n PUs at path and returns its size.
func journalWith(t *testing.T, path string, n int) int64 {
	t.Helper()
	j, err := Open(path, Options{Logger: quiet()})
	require.NoError(t, err)
	require.NoError(t, j.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPUs)
		for i := range n {
			p := pu(fmt.Sprintf("uid-%05d", i), fmt.Sprintf("web-%d", i), fmt.Sprintf("sandbox-%064d", i))
			if err := b.Put([]byte(p.PUID), encodeRecord(p)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, j.Close())
	size, err := fileSize(path)
	require.NoError(t, err)
	return size
}

// boltFile writes a bbolt file at path and lets f fill it.
func boltFile(t *testing.T, path string, f func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(f))
	require.NoError(t, db.Close())
}

// Whatever is at the path, when it is not a journal Open fails with a
// clear error and the file keeps every byte it had.
func TestOpenRefusesWhatIsNotAJournal(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want error
	}{
		{"random bytes", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, randomBytes(64<<10), 0o600))
		}, ErrNotJournal},
		{"a text file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("pods: [web-0, web-1]\n"), 0o600))
		}, ErrNotJournal},
		{"a few bytes", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte{0}, 0o600))
		}, ErrNotJournal},
		{"another bbolt database", func(t *testing.T, path string) {
			boltFile(t, path, func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket([]byte("widgets"))
				if err != nil {
					return err
				}
				return b.Put([]byte("w1"), []byte("blue"))
			})
		}, ErrNotJournal},
		{"a bbolt database with a meta bucket of its own", func(t *testing.T, path string) {
			boltFile(t, path, func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket(bucketMeta)
				if err != nil {
					return err
				}
				return b.Put(keyFormat, []byte("something-else"))
			})
		}, ErrNotJournal},
		{"a truncated journal", func(t *testing.T, path string) {
			size := journalWith(t, path, 2000)
			require.NoError(t, os.Truncate(path, size/2))
		}, ErrNotJournal},
		{"a journal whose meta pages are damaged", func(t *testing.T, path string) {
			journalWith(t, path, 10)
			overwrite(t, path, 0, randomBytes(2*4096))
		}, ErrNotJournal},
		{"a journal whose data pages are damaged", func(t *testing.T, path string) {
			size := journalWith(t, path, 2000)
			overwrite(t, path, 2*4096, randomBytes(int(size)-2*4096))
		}, ErrNotJournal},
		{"a journal with a bad record", func(t *testing.T, path string) {
			journalWith(t, path, 10)
			boltFile(t, path, func(tx *bbolt.Tx) error {
				return tx.Bucket(bucketPUs).Put([]byte("uid-bad"), []byte{1, 200, 'x'})
			})
		}, ErrNotJournal},
		{"a journal of a newer version", func(t *testing.T, path string) {
			journalWith(t, path, 10)
			boltFile(t, path, func(tx *bbolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyVersion, binary.BigEndian.AppendUint32(nil, formatVersion+1))
			})
		}, ErrUnsupportedVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newPath(t)
			tc.make(t, path)
			before := sum(t, path)

			j, err := Open(path, Options{Logger: quiet()})

			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, j)
			assert.Contains(t, err.Error(), path, "the error names the file")
			t.Log(err)
			assert.Equal(t, before, sum(t, path), "the file is left as it was")
			j, err = Open(path, Options{Logger: quiet()})
			require.ErrorIs(t, err, tc.want, "and stays refused: nothing was started over it")
			assert.Nil(t, j)
		})
	}
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// A path that names a directory is the path's fault, as a missing
// directory is (ErrInvalidOptions, which a program refuses its command line
// with), not a file that is no journal; it is left as it is.
func TestOpenRefusesADirectoryAsAnInvalidPath(t *testing.T) {
	path := newPath(t)
	require.NoError(t, os.Mkdir(path, 0o700))
	_, err := Open(path, Options{Logger: quiet()})
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.NotErrorIs(t, err, ErrNotJournal)
	assert.DirExists(t, path)
}

func TestOpenCreatesAMissingFileButNotItsDirectory(t *testing.T) {
	path := newPath(t)
	j := open(t, path)
	assert.FileExists(t, path)
	assert.Empty(t, list(t, j))

	missing := filepath.Join(t.TempDir(), "not-mounted", "journal.db")
	_, err := Open(missing, Options{Logger: quiet()})
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "not created")
	assert.NoDirExists(t, filepath.Dir(missing))
}

// An empty file and a bbolt file without a bucket hold nothing: a journal
// whose creation was cut short. Refusing them would keep an agent from
// starting for no loss.
func TestOpenTakesAFileThatHoldsNothing(t *testing.T) {
	for name, make := range map[string]func(t *testing.T, path string){
		"empty file": func(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, nil, 0o600)) },
		"blank bbolt": func(t *testing.T, path string) {
			boltFile(t, path, func(*bbolt.Tx) error { return nil })
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := newPath(t)
			make(t, path)
			j := open(t, path)
			j.Observe(event(deletion.EventTracked, pu("uid-a", "web-0", "")))
			require.NoError(t, j.Close())
			assert.Equal(t, []ports.PU{pu("uid-a", "web-0", "")}, reopened(t, path))
		})
	}
}

// A journal held by another Journal (the same lock another process would
// hold) fails after Timeout, and opens once it is let go.
func TestOpenLocked(t *testing.T) {
	path := newPath(t)
	first, err := Open(path, Options{Logger: quiet()})
	require.NoError(t, err)

	const timeout = 300 * time.Millisecond
	start := time.Now()
	second, err := Open(path, Options{Timeout: timeout, Logger: quiet()})
	took := time.Since(start)

	require.ErrorIs(t, err, ErrLocked)
	assert.Nil(t, second)
	assert.Contains(t, err.Error(), path)
	// bbolt tries the lock every 50ms and gives up once the next try would
	// end past Timeout.
	assert.GreaterOrEqual(t, took, timeout/2, "it waited for the lock")
	assert.Less(t, took, timeout+2*time.Second, "and no longer than Timeout")

	require.NoError(t, first.Close())
	second, err = Open(path, Options{Timeout: timeout, Logger: quiet()})
	require.NoError(t, err)
	require.NoError(t, second.Close())
}

func TestOpenInvalidOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"negative timeout":     {Timeout: -time.Second},
		"negative batch delay": {BatchDelay: -time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(newPath(t), o)
			require.ErrorIs(t, err, ErrInvalidOptions)
		})
	}
	_, err := Open("", Options{})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// A path that is a link into a directory that does not exist (a mount
// missing behind it) is refused as a missing directory is: the journal
// would not be created there, and the link is left as it is.
func TestOpenRefusesALinkIntoAMissingDirectoryAsAnInvalidPath(t *testing.T) {
	dir := t.TempDir()
	for name, to := range map[string]string{
		"absolute": filepath.Join(dir, "not-mounted", "journal.db"),
		"relative": filepath.Join("not-mounted", "journal.db"),
	} {
		t.Run(name, func(t *testing.T) {
			link := filepath.Join(dir, name+".db")
			require.NoError(t, os.Symlink(to, link))
			_, err := Open(link, Options{Logger: quiet()})
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), "not-mounted")
			assert.NoDirExists(t, filepath.Join(dir, "not-mounted"))
		})
	}
	// Through a second link, too; and a link into a directory that exists
	// creates the journal where it points.
	link := filepath.Join(dir, "chain.db")
	require.NoError(t, os.Symlink(filepath.Join(dir, "absolute.db"), link))
	_, err := Open(link, Options{Logger: quiet()})
	require.ErrorIs(t, err, ErrInvalidOptions)

	target := filepath.Join(dir, "there", "journal.db")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o700))
	ok := filepath.Join(dir, "ok.db")
	require.NoError(t, os.Symlink(target, ok))
	j, err := Open(ok, Options{Logger: quiet()})
	require.NoError(t, err)
	require.NoError(t, j.Close())
	assert.FileExists(t, target)
}
