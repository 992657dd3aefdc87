package contracts_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
	"k8s.io/apimachinery/pkg/types"

	"golang.org/x/time/rate"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// docs/sdk/cni-freeing.md:50-51: "ConfDir is read again right before each DEL, and the verdict asked again on it: a
// disableGC set while another DEL of the pod runs keeps that network's attachment."
func TestHoldsDisableGCSetDuringDEL(t *testing.T) {
	e := newEnv(t)
	// The first DEL (net1, sorted first) writes net2's config with disableGC, as an operator would meanwhile.
	hook := filepath.Join(e.plugins, "hookplug")
	script := "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME hook\" >> " + e.calls + "\n" +
		"printf '%s' '" + string(netConf("net2", "", true)) + "' > " + filepath.Join(e.conf, "20-net2.conflist") + "\nexit 0\n"
	must(t, os.WriteFile(hook, []byte(script), 0o755))
	c1 := []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"hookplug"}]}`)
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", c1, "10.9.0.5")
	e.writeEntry("net2", "deadsb1", "eth1", e.goneNetNS("deadsb1"), "uid-gone", netConf("net2", "", false), "10.8.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	_ = destroyGone(t, c, "uid-gone", "deadsb1")
	if d := e.dels(); len(d) != 1 {
		t.Fatalf("DELs %v", d)
	}
}

// docs/sdk/cni-freeing.md:84-89: right before each DEL, once time has passed since the round's list (a turn waited
// for under ReservationRate), the runtime again (row 15: a sandbox it lists again).
func TestHoldsRateTurnAsksRuntimeAgain(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	e.writeReservation(e.data, "net1", "10.9.0.2", "c2", "eth0", time.Hour)
	rt := &testcni.Runtime{}
	rt.Hook = func(n int) {
		if n >= 2 {
			rt.Set(sandbox("c2", "uid-x", false, time.Now()))
		}
	}
	o := e.opts(rt, (&logRec{}).logger())
	o.ReservationRate, o.ReservationBurst = rate.Limit(5), 1
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.1", "10.9.0.2")
	for _, d := range e.dels() {
		if strings.HasPrefix(d, "DEL c2 ") {
			t.Fatalf("c2 listed again before its DEL, and DELed: %v", e.dels())
		}
	}
	if len(e.dels()) != 1 {
		t.Fatalf("DELs %v", e.dels())
	}
}

// docs/sdk/cni-freeing.md:103-105: "A sandbox kept because what the table decides on could not be read (the runtime
// could not be asked ...) is kept by no row: its last decision is row -1, and says why."
func TestHoldsRuntimeFailingKeepsByNoRow(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	rt := &testcni.Runtime{Err: os.ErrDeadlineExceeded}
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	if err := destroyGone(t, c, "uid-gone", "deadsb1"); err == nil || len(e.dels()) > 0 {
		t.Fatalf("err %v, DELs %v", err, e.dels())
	}
	st := testcni.Address(t, c, "10.9.0.5")
	if len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Row != -1 {
		t.Fatalf("page %+v", st.Attachments)
	}
}

// docs/sdk/cni-freeing.md:114-116: "A reservation the round decided to free and kept right before its DEL, for what
// it is decided on could not be read again, is told kept by no row (row -1), with why".
func TestHoldsReservationRecheckUnreadableKeepsByNoRow(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	rt := &testcni.Runtime{}
	// Once the round has listed the runtime, a config of ConfDir becomes unreadable (a link to nothing seen).
	rt.Hook = func(int) {
		_ = os.Symlink(filepath.Join(e.root, "not-mounted", "x.conflist"), filepath.Join(e.conf, "00-x.conflist"))
	}
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	ctxSweep(t, c)
	st := testcni.Address(t, c, "10.9.0.1")
	if len(e.dels()) > 0 || len(st.Reservations) != 1 || st.Reservations[0].Decision.Row != -1 {
		t.Fatalf("DELs %v, page %+v", e.dels(), st.Reservations)
	}
}

// ctxSweep runs Resync for a while: its first round.
func ctxSweep(t *testing.T, c *cni.Collector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	must(t, c.Resync(ctx, testcni.NopTracker{}))
}

type recObserver struct {
	mu                                   sync.Mutex
	freed, failed, would, reported, nets int
}

func (o *recObserver) ReservationFreed(string, string)      { o.mu.Lock(); o.freed++; o.mu.Unlock() }
func (o *recObserver) ReservationFreeFailed(string, string) { o.mu.Lock(); o.failed++; o.mu.Unlock() }
func (o *recObserver) ReservationWouldFree(string, string)  { o.mu.Lock(); o.would++; o.mu.Unlock() }
func (o *recObserver) ReservationReported(string, string)   { o.mu.Lock(); o.reported++; o.mu.Unlock() }
func (o *recObserver) ReservationNetwork(string)            { o.mu.Lock(); o.nets++; o.mu.Unlock() }

// go doc Observer: "ReservationReported: a reservation is reported and never touched (ReasonConfigGone); told once for
// each." "ReservationWouldFree: a dry run would free a reservation; told once for each." Several rounds.
func TestHoldsObserverToldOnce(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "gone-net", "10.7.0.1", "c0", "eth0", time.Hour)
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	obs := &recObserver{}
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.Observer, o.DryRun, o.ResyncInterval = obs, true, 20*time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	must(t, c.Resync(ctx, testcni.NopTracker{}))
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.reported != 1 || obs.would != 1 || obs.freed != 0 || obs.nets < 3 || len(e.dels()) != 0 {
		t.Fatalf("observer %+v, DELs %v", obs, e.dels())
	}
}

// go doc Options.ReservationRate: "at most how many host-local reservations Resync frees a second ... ReservationBurst
// is how many may be freed at once under it."
func TestHoldsReservationRate(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	ips := []string{}
	for i := 1; i <= 5; i++ {
		ip := "10.9.0." + string(rune('0'+i))
		ips = append(ips, ip)
		e.writeReservation(e.data, "net1", ip, "c"+ip, "eth0", time.Hour)
	}
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.ReservationRate, o.ReservationBurst = rate.Limit(4), 2
	c, err := cni.New(o)
	must(t, err)
	start := time.Now()
	sweepOnce(t, c, ips...)
	// 5 frees, burst 2, then 4 a second: the last no sooner than 0.75s after the first.
	if el := time.Since(start); len(e.dels()) != 5 || el < 700*time.Millisecond {
		t.Fatalf("%d DELs in %v", len(e.dels()), el)
	}
}

// docs/sdk/cni-freeing.md:36-37 and 106-107: a config of ConfDir being written whose top-level name cannot be told yet
// keeps every network; the page says in its unread what it could not read, and tells the rest.
func TestHoldsConfCutBeforeNameKeepsAllAndPageSaysUnread(t *testing.T) {
	e := newEnv(t)
	e.writeConf("05-new.conflist", []byte(`{"cniVersion":"1.0.0","plu`))
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	if err := destroyGone(t, c, "uid-gone", "deadsb1"); err == nil || len(e.dels()) > 0 {
		t.Fatalf("err %v, DELs %v", err, e.dels())
	}
	st := testcni.Address(t, c, "10.9.0.5")
	if len(st.Unread) == 0 || len(st.Attachments) != 1 || st.Attachments[0].Decision == nil || st.Attachments[0].Decision.Row != -1 {
		t.Fatalf("page %+v", st)
	}
}

// docs/sdk/cni-freeing.md:67-70: each reservation of a network's directory that is a link "is reported (logged once,
// LogMessageReservationSkipped) and never touched".
func TestHoldsLinkedNetworkDirLoggedOnce(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	other := filepath.Join(e.root, "otherdisk")
	e.writeReservation(other, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	must(t, os.Symlink(filepath.Join(other, "net1"), filepath.Join(e.data, "net1")))
	rec := &logRec{}
	o := e.opts(&testcni.Runtime{}, rec.logger())
	o.ResyncInterval = 20 * time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	must(t, c.Resync(ctx, testcni.NopTracker{}))
	n := 0
	for _, l := range rec.all() {
		if strings.Contains(l, cni.LogMessageReservationSkipped) && strings.Contains(l, "10.9.0.1") {
			n++
		}
	}
	if n != 1 || len(e.dels()) != 0 {
		t.Fatalf("logged %d times, DELs %v", n, e.dels())
	}
}

// docs/sdk/cni-freeing.md:93-94: "A DEL that succeeds while the file still names the container is a failure, retried
// at the next resync."
func TestHoldsDelThatFreesNothingIsAFailureRetried(t *testing.T) {
	e := newEnv(t)
	// noopplug's DEL succeeds and frees nothing.
	must(t, os.WriteFile(filepath.Join(e.plugins, "noopplug"), []byte("#!/bin/sh\ncat >/dev/null\nexit 0\n"), 0o755))
	e.writeConf("10-net1.conflist", []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"noopplug","ipam":{"type":"host-local","dataDir":"`+e.data+`"}}]}`))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	obs := &recObserver{}
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.Observer, o.ResyncInterval = obs, 30*time.Millisecond
	c, err := cni.New(o)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	must(t, c.Resync(ctx, testcni.NopTracker{}))
	obs.mu.Lock()
	defer obs.mu.Unlock()
	st := testcni.Address(t, c, "10.9.0.1").Reservations
	// Retried: failed at least twice, never told freed. The page tells the last DEL's failure, or, when Resync's end
	// cut the round that decided it again before its DEL, that it is to free.
	if obs.freed != 0 || obs.failed < 2 || len(st) != 1 || st[0].State != "free failed" && st[0].State != "to free" {
		t.Fatalf("observer %+v, page %+v, DELs %d", obs, st, len(e.dels()))
	}
}

// go doc Observer.ReservationReported: "told once for each"; a reservation reported stays told while its file holds
// it, whatever the rounds between say of its config (its config written anew by an installer).
func TestHoldsReportedOnceWhileConfigFlaps(t *testing.T) {
	e := newEnv(t)
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Second) // young: kept while its config is there
	obs := &recObserver{}
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.Observer, o.ReservationGrace = obs, time.Hour
	c, err := cni.New(o)
	must(t, err)
	conf := filepath.Join(e.conf, "10-net1.conflist")
	for i := 0; i < 4; i++ {
		if i%2 == 0 {
			_ = os.Remove(conf)
		} else {
			e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
		}
		ctxSweep(t, c)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.reported != 1 || len(e.dels()) != 0 {
		t.Fatalf("reported %d times, DELs %v", obs.reported, e.dels())
	}
}

// go doc Observer.ReservationWouldFree: "told once for each"; LogMessageReservationWouldFree: "once for each
// host-local reservation it would free, while its file holds it" — a round between in which the runtime failed.
func TestHoldsWouldFreeToldOnceAcrossRuntimeFailure(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	obs := &recObserver{}
	rt := &testcni.Runtime{}
	rec := &logRec{}
	o := e.opts(rt, rec.logger())
	o.Observer, o.DryRun = obs, true
	c, err := cni.New(o)
	must(t, err)
	for i := 0; i < 3; i++ {
		var err error
		if i == 1 {
			err = os.ErrDeadlineExceeded
		}
		rt.SetErr(err)
		ctxSweep(t, c)
	}
	n := 0
	for _, l := range rec.all() {
		if strings.Contains(l, cni.LogMessageReservationWouldFree) {
			n++
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.would != 1 || n != 1 || len(c.WouldFree()) != 1 {
		t.Fatalf("told %d, logged %d, WouldFree %v", obs.would, n, c.WouldFree())
	}
}

// docs/sdk/cni-freeing.md:117-118: "a reservation kept by row 14 because the runtime did not answer says so."
func TestHoldsRow14SaysRuntimeDidNotAnswer(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	c, err := cni.New(e.opts(&testcni.Runtime{Err: os.ErrDeadlineExceeded}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	st := testcni.Address(t, c, "10.9.0.1").Reservations
	if len(st) != 1 || st[0].Decision.Row != 14 || !strings.Contains(st[0].Decision.Why, "did not answer") || len(e.dels()) > 0 {
		t.Fatalf("page %+v, DELs %v", st, e.dels())
	}
}

// go doc LogMessageEntrySkipped: "logs (at info) once for each cache entry it skips and never deletes (another
// runtime's, or one it cannot read or use)".
func TestHoldsEntrySkippedLoggedOnce(t *testing.T) {
	e := newEnv(t)
	b := entryJSON("net1", "other", "eth0", "", "x", netConf("net1", "", false), "10.9.0.9")
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	delete(m, "cniArgs") // another runtime's: no pod's arguments
	b, _ = json.Marshal(m)
	must(t, os.WriteFile(filepath.Join(e.cache, "results", "net1-other-eth0"), b, 0o600))
	rec := &logRec{}
	c, err := cni.New(e.opts(&testcni.Runtime{}, rec.logger()))
	must(t, err)
	for i := 0; i < 3; i++ {
		_, err := c.ListPUs(context.Background())
		must(t, err)
	}
	n := 0
	for _, l := range rec.all() {
		if strings.Contains(l, cni.LogMessageEntrySkipped) && strings.Contains(l, "net1-other-eth0") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("logged %d times", n)
	}
}

// docs/sdk/cni-freeing.md:70-71: "A network kept for a named pipe in its own directory of plugin configs is kept with
// its reservations (row 13), not reported gone."
func TestHoldsFIFOInNetworkDirKeepsReservations(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	must(t, os.MkdirAll(filepath.Join(e.conf, "net1"), 0o755))
	must(t, unixMkfifo(filepath.Join(e.conf, "net1", "20-x.conf")))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	st := testcni.Address(t, c, "10.9.0.1").Reservations
	if len(e.dels()) > 0 || len(st) != 1 || st[0].Decision.Row != 13 {
		t.Fatalf("DELs %v, page %+v", e.dels(), st)
	}
}

// docs/sdk/cni-freeing.md:33-37: a config of ConfDir being written keeps its network's reservations by no row (row -1)
// and says why.
func TestHoldsConfBeingWrittenKeepsReservationsByNoRow(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeConf("20-net1b.conflist", []byte(`{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"fakeplug","ipam":{"ty`))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	st := testcni.Address(t, c, "10.9.0.1").Reservations
	if len(e.dels()) > 0 || len(st) != 1 || st[0].Decision.Row != -1 || !strings.Contains(st[0].Decision.Why, "being written") {
		t.Fatalf("DELs %v, page %+v", e.dels(), st)
	}
}

// addresses.go ReservationStatus.State: "would free" (a dry run); docs/sdk/cni-freeing.md:95: "With Options.DryRun
// nothing is DELed".
func TestHoldsDryRunPageWouldFree(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	o := e.opts(&testcni.Runtime{}, (&logRec{}).logger())
	o.DryRun = true
	c, err := cni.New(o)
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	st := testcni.Address(t, c, "10.9.0.1").Reservations
	if len(e.dels()) > 0 || len(st) != 1 || st[0].State != "would free" || !st[0].Decision.DryRun || len(c.WouldFree()) != 1 {
		t.Fatalf("DELs %v, page %+v", e.dels(), st)
	}
}

// addresses.go AddressStatus.ReservationsRead: "nil: none has yet (or none could read them)".
func TestHoldsReservationsReadNilBeforeAnyRound(t *testing.T) {
	e := newEnv(t)
	e.writeConf("05-cut.conflist", []byte(`{"cniVersion":"1.0.0","plu`)) // every round fails to read ConfDir
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	if testcni.Address(t, c, "10.9.0.1").ReservationsRead != nil {
		t.Fatal("before any round")
	}
	ctxSweep(t, c)
	if st := testcni.Address(t, c, "10.9.0.1"); st.ReservationsRead != nil {
		t.Fatalf("no round could read them: %+v", st)
	}
}

// go doc LogMessageReservationFreed: "the message of the line the Collector logs (at info) for each host-local
// reservation it freed".
func TestHoldsReservationFreedLogged(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	rec := &logRec{}
	c, err := cni.New(e.opts(&testcni.Runtime{}, rec.logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	n := 0
	for _, l := range rec.all() {
		if strings.Contains(l, cni.LogMessageReservationFreed) && strings.Contains(l, "10.9.0.1") {
			n++
		}
	}
	if n != 1 || len(e.dels()) != 1 {
		t.Fatalf("logged %d, DELs %v", n, e.dels())
	}
}

// docs/sdk/cni-freeing.md:76 (row 12): a reservation whose network's config is gone is reported, never touched
// (ConfigGone), and the page tells it "reported".
func TestHoldsConfigGoneReported(t *testing.T) {
	e := newEnv(t)
	e.writeReservation(e.data, "gone-net", "10.9.0.1", "c1", "eth0", time.Hour)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	st := testcni.Address(t, c, "10.9.0.1").Reservations
	if len(e.dels()) > 0 || len(st) != 1 || st[0].State != "reported" || st[0].Decision.Row != 12 || st[0].Decision.Reason != cni.ReasonConfigGone {
		t.Fatalf("DELs %v, page %+v", e.dels(), st)
	}
}

// docs/sdk/cni-freeing.md:30-33: a network whose cached config, of any entry of the cache, says disableGC is never
// DELed, the entry of another pod included.
func TestHoldsCachedDisableGCOfAnotherEntryKeeps(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	e.writeEntry("net1", "othersb", "eth0", e.presentNetNS("othersb"), "uid-other", netConf("net1", "", true), "10.9.0.6")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	_ = destroyGone(t, c, "uid-gone", "deadsb1")
	if len(e.dels()) > 0 {
		t.Fatalf("DELs %v", e.dels())
	}
}

// docs/sdk/cni-freeing.md:38-41: "A cache entry that is a link is never used (...), but what it holds and its cached
// config's disableGC count as any entry's, and a PU whose entry it is answers ErrUnusableEntry".
func TestHoldsLinkEntryDisableGCCounts(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "deadsb1", "eth0", e.goneNetNS("deadsb1"), "uid-gone", netConf("net1", "", false), "10.9.0.5")
	real := filepath.Join(e.root, "elsewhere")
	must(t, os.WriteFile(real, entryJSON("net1", "othersb", "eth0", "", "uid-other", netConf("net1", "", true), "10.9.0.6"), 0o600))
	must(t, os.Symlink(real, filepath.Join(e.cache, "results", "net1-othersb-eth0")))
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	_ = destroyGone(t, c, "uid-gone", "deadsb1")
	if len(e.dels()) > 0 {
		t.Fatalf("DELs %v", e.dels())
	}
}

// docs/sdk/cni-freeing.md:28 (row 11): a gone pod's sandbox the runtime does not list, whose namespace tells nothing,
// is freed; docs/sdk/cni-freeing.md:19 (row 2): not while the runtime lists another ready sandbox of the pod.
func TestHoldsRow11AndRow2(t *testing.T) {
	for _, other := range []bool{false, true} {
		e := newEnv(t)
		e.writeEntry("net1", "sb1", "eth0", "", "uid-p", netConf("net1", "", false), "10.9.0.5")
		rt := &testcni.Runtime{}
		if other {
			rt.Set(sandbox("sb2", "uid-p", true, time.Now()))
		}
		c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
		must(t, err)
		err = destroyGone(t, c, "uid-p", "sb1")
		if other != errors.Is(err, cni.ErrSandboxRunning) || other == (len(e.dels()) == 1) {
			t.Fatalf("other %v: err %v, DELs %v", other, err, e.dels())
		}
	}
}

// docs/sdk/cni-freeing.md:20 (row 3): the runtime lists it stopped: freed, whatever its namespace says.
func TestHoldsRow3StoppedFreed(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.presentNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	rt := &testcni.Runtime{}
	rt.Set(sandbox("sb1", "uid-p", false, time.Now()))
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	if err := destroyGone(t, c, "uid-p", "sb1"); err != nil || len(e.dels()) != 1 {
		t.Fatalf("err %v, DELs %v", err, e.dels())
	}
	if f := testcni.Address(t, c, "10.9.0.5").Freed; len(f) != 1 || f[0].Decision.Row != 3 {
		t.Fatalf("page %+v", f)
	}
}

// docs/sdk/cni-freeing.md:80 (row 16): a reservation whose container a cache entry names is kept, whatever network the
// entry is of.
func TestHoldsRow16CachedOtherNetwork(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "sb1", "eth0", time.Hour)
	e.writeEntry("net2", "sb1", "eth1", e.goneNetNS("sb1"), "uid-p", netConf("net2", "", false), "10.8.0.1")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	// Row 14 "not asked" when no reservation needs the runtime (documented, docs/operating/explain.md:285-287).
	if st := testcni.Address(t, c, "10.9.0.1").Reservations; len(e.dels()) > 0 || len(st) != 1 || st[0].Decision.Row != 16 && !strings.Contains(st[0].Decision.Why, "not asked") {
		t.Fatalf("DELs %v, page %+v", e.dels(), st)
	}
}

// docs/sdk/cni-freeing.md:127: "nor any without a runtime to ask".
func TestHoldsNoRuntimeNoReservationFreed(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Hour)
	c, err := cni.New(e.opts(nil, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	if st := testcni.Address(t, c, "10.9.0.1").Reservations; len(e.dels()) > 0 || len(st) != 1 || st[0].Decision.Row != 14 {
		t.Fatalf("DELs %v, page %+v", e.dels(), st)
	}
}

// docs/sdk/cni-freeing.md:17 (row 0): a sandbox change whose sandbox holds only attachments of disableGC networks: keep,
// no error.
func TestHoldsRow0DisableGCOnly(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", true), "10.9.0.5")
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-p"},
		SandboxID: "sb1", Reason: ports.ReasonSandboxChanged})
	if err != nil || len(e.dels()) > 0 {
		t.Fatalf("err %v, DELs %v", err, e.dels())
	}
}

// docs/sdk/cni-freeing.md:17-18: a sandbox change of a sandbox the runtime lists ready answers ErrNewestSandbox
// (checked here against a listed-twice sandbox, once stopped: "A sandbox listed both ready and stopped is ready").
func TestHoldsListedTwiceIsReady(t *testing.T) {
	e := newEnv(t)
	e.writeEntry("net1", "sb1", "eth0", e.goneNetNS("sb1"), "uid-p", netConf("net1", "", false), "10.9.0.5")
	rt := &testcni.Runtime{}
	rt.Set(sandbox("sb1", "uid-p", false, time.Now()), sandbox("sb1", "", true, time.Now()))
	c, err := cni.New(e.opts(rt, (&logRec{}).logger()))
	must(t, err)
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-p", Pod: types.NamespacedName{Namespace: "ns", Name: "pod-uid-p"},
		SandboxID: "sb1", Reason: ports.ReasonSandboxChanged})
	if !errors.Is(err, cni.ErrNewestSandbox) || len(e.dels()) > 0 {
		t.Fatalf("err %v, DELs %v", err, e.dels())
	}
}

// docs/sdk/cni-freeing.md:81 (row 17): a reservation younger than ReservationGrace is kept.
func TestHoldsYoungReservationKept(t *testing.T) {
	e := newEnv(t)
	e.writeConf("10-net1.conflist", netConf("net1", e.data, false))
	e.writeReservation(e.data, "net1", "10.9.0.1", "c1", "eth0", time.Second)
	c, err := cni.New(e.opts(&testcni.Runtime{}, (&logRec{}).logger()))
	must(t, err)
	sweepOnce(t, c, "10.9.0.1")
	if st := testcni.Address(t, c, "10.9.0.1").Reservations; len(e.dels()) > 0 || len(st) != 1 || st[0].Decision.Row != 17 {
		t.Fatalf("DELs %v, page %+v", e.dels(), st)
	}
}
