package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// benchEngine starts an engine with in-memory ports (every pod lives), an
// interval of an hour (no check runs during the benchmark) and opts. It is
// stopped at the end of the benchmark.
func benchEngine(b *testing.B, opts deletion.Options) *deletion.Engine {
	b.Helper()
	getter := ports.PodGetterFunc(func(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		p := &corev1.Pod{}
		p.Namespace, p.Name = key.Namespace, key.Name
		return p, nil
	})
	policy := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	opts.SweepInterval = time.Hour
	opts.Logger = benchLogger()
	c, err := deletion.New(getter, policy, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

func benchLogger() logr.Logger { return funcr.New(func(_, _ string) {}, funcr.Options{}) }

func benchJournal(b *testing.B, opts Options) *Journal {
	b.Helper()
	opts.Logger = benchLogger()
	j, err := Open(filepath.Join(b.TempDir(), "journal.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = j.Close() })
	return j
}

func benchPU(i int64) ports.PU {
	return ports.PU{
		PUID:      fmt.Sprintf("0b1c2d3e-aaaa-4bbb-8ccc-%012d", i),
		Pod:       types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("web-7d4b9c8f5-%06d", i)},
		SandboxID: fmt.Sprintf("%064d", i),
	}
}

// BenchmarkTrack measures Track on an engine whose Observer is the journal:
// each Track returns once its PU is committed to the file. ns/op is wall
// time per Track (with 16 goroutines, 16 run at once); commits/op says how
// many Tracks shared a commit.
func BenchmarkTrack(b *testing.B) {
	for _, delay := range []time.Duration{0, 250 * time.Microsecond, 10 * time.Millisecond} {
		name := "delay=default"
		if delay != 0 {
			name = "delay=" + delay.String()
		}
		b.Run(name+"/goroutines=1", func(b *testing.B) {
			j := benchJournal(b, Options{BatchDelay: delay})
			c := benchEngine(b, deletion.Options{Observer: j})
			before := benchCommits(b, j)
			var i int64
			for b.Loop() {
				i++
				if err := c.Track(benchPU(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchCommits(b, j)-before)/float64(b.N), "commits/op")
			if j.Failures() != 0 {
				b.Fatal("failed writes")
			}
		})
		b.Run(name+"/goroutines=16", func(b *testing.B) {
			j := benchJournal(b, Options{BatchDelay: delay})
			c := benchEngine(b, deletion.Options{Observer: j})
			before := benchCommits(b, j)
			var next atomic.Int64
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Track(benchPU(next.Add(1))); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(benchCommits(b, j)-before)/float64(b.N), "commits/op")
			if j.Failures() != 0 {
				b.Fatal("failed writes")
			}
		})
	}
	b.Run("no-journal/goroutines=1", func(b *testing.B) {
		c := benchEngine(b, deletion.Options{})
		var i int64
		for b.Loop() {
			i++
			if err := c.Track(benchPU(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchCommits(b *testing.B, j *Journal) int {
	var id int
	if err := j.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		b.Fatal(err)
	}
	return id
}

const restorePUs = 10_000

// fillJournal writes n PUs into j in one commit.
func fillJournal(b *testing.B, j *Journal, n int) {
	b.Helper()
	if err := j.db.Update(func(tx *bbolt.Tx) error {
		bk := tx.Bucket(bucketPUs)
		for i := range n {
			p := benchPU(int64(i))
			if err := bk.Put([]byte(p.PUID), encodeRecord(p)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRestore measures a restart on a journal of 10,000 PUs: reading
// them (ListPUs), and an engine's Start until EventRestored, every PU
// tracked again (each EventTracked costs the journal a read, no write).
// foreign-1000 is a restore from another Inventory (the policy engine's
// list) with the journal as Observer: 1,000 PUs the journal does not hold,
// each written (one commit per PU: the restore tracks them one after
// another).
func BenchmarkRestore(b *testing.B) {
	b.Run("ListPUs-10000", func(b *testing.B) {
		j := benchJournal(b, Options{})
		fillJournal(b, j, restorePUs)
		for b.Loop() {
			pus, err := j.ListPUs(context.Background())
			if err != nil || len(pus) != restorePUs {
				b.Fatal(len(pus), err)
			}
		}
	})
	b.Run("Start-10000", func(b *testing.B) {
		j := benchJournal(b, Options{})
		fillJournal(b, j, restorePUs)
		for range b.N {
			restoreOnce(b, j, j, restorePUs)
		}
	})
	b.Run("foreign-1000", func(b *testing.B) {
		j := benchJournal(b, Options{})
		var round atomic.Int64
		inv := ports.InventoryFunc(func(context.Context) ([]ports.PU, error) {
			r := round.Add(1)
			pus := make([]ports.PU, 1000)
			for i := range pus {
				pus[i] = benchPU(r*1_000_000 + int64(i))
			}
			return pus, nil
		})
		for range b.N {
			restoreOnce(b, inv, j, 1000)
		}
	})
}

// restoreOnce starts an engine restoring from inv with j as Observer, and
// times it from Start to EventRestored.
func restoreOnce(b *testing.B, inv ports.Inventory, j *Journal, want int) {
	b.StopTimer()
	restored := make(chan int, 1)
	c, err := deletion.New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
		return nil, ports.ErrPodNotFound
	}), ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil }), deletion.Options{
		Inventory: inv,
		Observer: deletion.Observers(j, deletion.ObserverFunc(func(ev deletion.Event) {
			if ev.Kind == deletion.EventRestored {
				restored <- ev.Count
			}
		})),
		SweepInterval: time.Hour,
		Logger:        benchLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.StartTimer()
	go func() { done <- c.Start(ctx) }()
	n := <-restored
	b.StopTimer()
	cancel()
	<-done
	if n != want || j.Failures() != 0 {
		b.Fatalf("restored %d, want %d; %d failed writes", n, want, j.Failures())
	}
	b.StartTimer()
}

// BenchmarkDrain measures a drain of a node of 250 PUs: every pod is gone,
// and one Sweep destroys every PU with the default 4 workers; with the
// journal, each destroy waits for the commit that forgets its PU (commits
// shared between the workers). ns/op is the whole drain.
func BenchmarkDrain(b *testing.B) {
	const pus = 250
	for _, withJournal := range []bool{true, false} {
		name := "journal"
		if !withJournal {
			name = "no-journal"
		}
		b.Run(name+"-250", func(b *testing.B) {
			var j *Journal
			if withJournal {
				j = benchJournal(b, Options{})
			}
			var round int64
			for range b.N {
				b.StopTimer()
				var destroyed atomic.Int64
				opts := deletion.Options{SweepInterval: time.Hour, Logger: benchLogger()}
				if j != nil {
					opts.Observer = j
				}
				c, err := deletion.New(ports.PodGetterFunc(func(context.Context, types.NamespacedName) (*corev1.Pod, error) {
					return nil, ports.ErrPodNotFound
				}), ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
					destroyed.Add(1)
					return nil
				}), opts)
				if err != nil {
					b.Fatal(err)
				}
				round++
				for i := range pus {
					if err := c.Track(benchPU(round*1_000_000 + int64(i))); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				c.Sweep(context.Background())
				b.StopTimer()
				if destroyed.Load() != pus || c.Len() != 0 {
					b.Fatalf("destroyed %d of %d", destroyed.Load(), pus)
				}
				if j != nil {
					if n, err := j.ListPUs(context.Background()); err != nil || len(n) != 0 || j.Failures() != 0 {
						b.Fatalf("the journal still holds %d PUs (%v), %d failures", len(n), err, j.Failures())
					}
				}
				b.StartTimer()
			}
		})
	}
}
