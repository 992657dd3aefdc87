package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/ports"
)

// The file's layout, version 1:
//
//	meta/format  = "podsweeper-journal"   the marker: a bbolt file without it is not ours
//	meta/version = uint32, big endian     1; a newer one is refused, never rewritten
//	pus/<PUID>   = a record (below)
//
// A record is a record version byte (1), then the pod's namespace, the pod's
// name and the sandbox ID, each as a uvarint length and its bytes: 94 bytes
// for pod default/web-7d4b9c8f5-x2k4q and a 64-hex-digit sandbox ID, where
// JSON with short field names takes 131 (measured with encoding/json), and
// a decoder of a few lines that refuses anything it does not use up exactly
// (FuzzDecodeRecord): a damaged record is reported, never guessed at.
var (
	bucketMeta = []byte("meta")
	bucketPUs  = []byte("pus")
	keyFormat  = []byte("format")
	keyVersion = []byte("version")
	formatName = []byte("podsweeper-journal")
)

const (
	formatVersion uint32 = 1
	recordVersion byte   = 1
)

// encodeRecord returns the record of pu (its PUID is the key, not in the record).
func encodeRecord(pu ports.PU) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen16+len(pu.Pod.Namespace)+len(pu.Pod.Name)+len(pu.SandboxID))
	b = append(b, recordVersion)
	for _, s := range [...]string{pu.Pod.Namespace, pu.Pod.Name, pu.SandboxID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

var errBadRecord = errors.New("bad record")

// decodeRecord returns the PU stored under key with record b.
func decodeRecord(key, b []byte) (ports.PU, error) {
	if len(key) == 0 {
		return ports.PU{}, fmt.Errorf("%w: empty PUID", errBadRecord)
	}
	if len(b) == 0 || b[0] != recordVersion {
		return ports.PU{}, fmt.Errorf("%w: PUID %q: unknown record version (% x)", errBadRecord, key, b[:min(len(b), 1)])
	}
	rest := b[1:]
	var fields [3]string
	for i := range fields {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return ports.PU{}, fmt.Errorf("%w: PUID %q: field %d overruns the record", errBadRecord, key, i)
		}
		fields[i] = string(rest[w : w+int(n)])
		rest = rest[w+int(n):]
	}
	if len(rest) != 0 {
		return ports.PU{}, fmt.Errorf("%w: PUID %q: %d bytes after the record", errBadRecord, key, len(rest))
	}
	pu := ports.PU{PUID: string(key), Pod: types.NamespacedName{Namespace: fields[0], Name: fields[1]}, SandboxID: fields[2]}
	if pu.Pod.Namespace == "" || pu.Pod.Name == "" {
		return ports.PU{}, fmt.Errorf("%w: PUID %q: pod %q has no name or namespace", errBadRecord, key, pu.Pod)
	}
	return pu, nil
}

// fileState is what checkFormat found in a bbolt file.
type fileState uint8

const (
	stateJournal fileState = iota + 1 // a journal of the supported version
	stateBlank                        // a bbolt file with no bucket at all: nothing to lose
)

// errNewerVersion: the file is a journal of a newer format.
var errNewerVersion = errors.New("a newer journal")

// checkFormat reads the marker and the version of the file of tx; with
// records, it also decodes every record. It returns an error, wrapping
// errNewerVersion for a newer journal, for a file that is not a journal it
// can use.
func checkFormat(tx *bbolt.Tx, records bool) (fileState, error) {
	var roots [][]byte
	if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		if len(roots) < 8 {
			roots = append(roots, bytes.Clone(name))
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("reading its buckets: %w", err)
	}
	if len(roots) == 0 {
		return stateBlank, nil
	}
	meta := tx.Bucket(bucketMeta)
	if meta == nil || !bytes.Equal(meta.Get(keyFormat), formatName) {
		return 0, fmt.Errorf("a bbolt file without the journal's marker (buckets %q)", roots)
	}
	v := meta.Get(keyVersion)
	if len(v) != 4 {
		return 0, fmt.Errorf("the format version is % x, want 4 bytes", v)
	}
	if got := binary.BigEndian.Uint32(v); got != formatVersion {
		return 0, fmt.Errorf("%w: format version %d, this build reads %d", errNewerVersion, got, formatVersion)
	}
	pus := tx.Bucket(bucketPUs)
	if pus == nil {
		return 0, fmt.Errorf("the marker is there but the bucket %q is not", bucketPUs)
	}
	if records {
		if err := pus.ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("%w: a nested bucket %q among the records", errBadRecord, k)
			}
			_, err := decodeRecord(k, v)
			return err
		}); err != nil {
			return 0, err
		}
	}
	return stateJournal, nil
}

// initFormat writes the marker, the version and the bucket of records into
// a blank file.
func initFormat(tx *bbolt.Tx) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(keyFormat, formatName); err != nil {
		return err
	}
	if err := meta.Put(keyVersion, binary.BigEndian.AppendUint32(nil, formatVersion)); err != nil {
		return err
	}
	_, err = tx.CreateBucket(bucketPUs)
	return err
}
