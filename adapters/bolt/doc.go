// Package bolt is a journal of the PUs a deletion engine tracks, kept in a
// file on go.etcd.io/bbolt (the embedded store of etcd), so that an agent
// that restarts (a DaemonSet rollout, an OOM kill, a node reboot) tracks
// again the PUs of pods that went away while it was down, and destroys them.
//
// A Journal is both sides of that: hooked as the engine's Observer
// (deletion.Options.Observer, through deletion.Observers next to the
// metrics), it records every PU the engine tracks and the sandbox it adopts,
// and forgets a PU once it is destroyed, abandoned or untracked; given as
// deletion.Options.Inventory, it lists what it holds when the engine starts.
// A PU is on disk when Track returns: the write of EventTracked is committed
// (fsync'd) before Observe returns, and concurrent Tracks share one commit.
//
//	j, err := bolt.Open("/var/lib/podsweeper/journal.db", bolt.Options{})
//	if err != nil {
//		return err // not a journal, or locked by another agent: see Open
//	}
//	defer j.Close()
//	engine, err := deletion.New(getter, policy, deletion.Options{
//		Inventory: j,
//		Observer:  deletion.Observers(j, metrics), // the journal first, as docs/sdk/restarts.md
//	})
//
// Open never starts empty over a file it cannot read as a journal: it fails
// and leaves the file as it is, for an operator to look at. One process at a
// time holds a journal; a second Open waits for the lock up to
// Options.Timeout, then fails with ErrLocked.
//
// The file holds a bucket "meta" with the format's marker and version, and a
// bucket "pus" with one record per PU, keyed by PUID (see format.go).
package bolt
