package cni_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// What a config of ConfDir being written (a CNI installer writing it anew)
// does: the one network it names is not read yet, and only that one. Its
// attachments are kept by no row until it can be read, its reservations
// likewise, and the address page says what it could not read; the other
// networks, and whatever else ConfDir holds, are decided as ever.

// halfConfig writes the config of network podnet, cut while it is written:
// its name is told, the rest is not.
func halfConfig(t *testing.T, confDir string) string {
	t.Helper()
	f := filepath.Join(confDir, "10-podnet.conflist")
	require.NoError(t, os.WriteFile(f, []byte(`{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"log`), 0o644))
	return f
}

// AttachmentStatus.DisableGC is "its network's config, cached or in
// ConfDir, says disableGC", and Unread says "what the Collector could not
// read for this answer": a config being written says nothing yet, so the
// page says it is unread, and does not say disableGC.
func TestAConfigBeingWrittenIsToldUnreadNotDisableGC(t *testing.T) {
	c := newCacheDir(t)
	addressEntry(t, c, "logger", "sb-web", "uid-web", "web", "10.1.0.5")
	f := halfConfig(t, c.conf)
	st := askAddress(t, c.collector().AddressHandler(), "10.1.0.5")
	require.Len(t, st.Attachments, 1)
	assert.False(t, st.Attachments[0].DisableGC, "no config says disableGC")
	require.Len(t, st.Unread, 1)
	assert.Contains(t, st.Unread[0], f)
	assert.Contains(t, st.Unread[0], "podnet")
}

// Row -1 is "when none could decide, for what it decides on could not be
// read": a gone pod's stopped sandbox (row 3, free) whose network's config
// is being written is kept by no row, told so, and freed once the config
// is whole; a dry run answers the same.
func TestADestroyWhileItsNetworksConfigIsBeingWrittenKeepsItByNoRow(t *testing.T) {
	c := newCacheDir(t)
	addressEntry(t, c, "logger", "sb-gone", "uid-gone", "gone", "10.1.0.5")
	rt := &listedRuntime{}
	rt.set(nil, listed("sb-gone", "uid-gone", false, time.Now().Add(-time.Hour)))
	coll := c.collectorWith(rt, 0)
	f := halfConfig(t, c.conf)
	ev := ports.DestroyEvent{PUID: "uid-gone", Pod: types.NamespacedName{Namespace: "apps", Name: "gone"}, Reason: ports.ReasonPodGone}
	for _, dry := range []bool{true, false} {
		var err error
		if dry {
			err = coll.DryRunDestroyPU(context.Background(), ev)
		} else {
			err = coll.DestroyPU(context.Background(), ev)
		}
		require.Error(t, err, "dry run %v", dry)
		assert.False(t, ports.IsPermanent(err), "tried again once the config is whole")
		assert.Contains(t, err.Error(), f)
		st := askAddress(t, coll.AddressHandler(), "10.1.0.5")
		require.Len(t, st.Attachments, 1, "kept")
		d := st.Attachments[0].Decision
		require.NotNil(t, d)
		assert.Equal(t, -1, d.Row, "decided by no row, not the stopped sandbox's row 3")
		assert.Equal(t, "keep", d.Verdict)
		assert.Equal(t, dry, d.DryRun)
		assert.Contains(t, d.Why, "being written")
	}
	assert.Empty(t, c.delCalls())
	assert.True(t, c.exists("podnet-sb-gone-eth0"))

	require.NoError(t, os.WriteFile(f, []byte(`{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"logger"}]}`), 0o644))
	require.NoError(t, coll.DestroyPU(context.Background(), ev))
	assert.Equal(t, []string{"DEL:sb-gone", "eth0"}, c.delCalls(), "freed once the config is whole")
}

// SandboxDead "answers whether a sandbox is dead": the Runtime and the
// network namespaces tell it, and a ConfDir that cannot be read (a config
// being written whose network cannot be told yet) does not stop it.
func TestSandboxDeadAnswersWhileConfDirCannotBeRead(t *testing.T) {
	c := newCacheDir(t)
	addressEntry(t, c, "logger", "sb-old", "uid-web", "web", "10.1.0.5")
	rt := &listedRuntime{}
	rt.set(nil, listed("sb-old", "uid-web", false, time.Now().Add(-time.Hour)), listed("sb-new", "uid-web", true, time.Now()))
	coll := c.collectorWith(rt, 0)
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "05-installer.conflist"), []byte(`{"cniVersion":"1.0.0","pl`), 0o644))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "uid-web"}}
	dead, err := coll.SandboxDead(context.Background(), pod, "sb-old")
	require.NoError(t, err)
	assert.True(t, dead, "the runtime lists it stopped")
	dead, err = coll.SandboxDead(context.Background(), pod, "sb-new")
	require.NoError(t, err)
	assert.False(t, dead, "the runtime lists it ready")
}

// reservationNode is a ConfDir whose network podnet runs host-local in
// data, and a reservation there of a container that nothing knows, an
// hour old (row 18 once its config is read).
func reservationNode(t *testing.T) (c *cacheDir, data string, obs *recorder, coll *cni.Collector) {
	t.Helper()
	c = newCacheDir(t)
	data = filepath.Join(t.TempDir(), "networks")
	writeAged(t, filepath.Join(data, "podnet", "10.1.0.9"), "leaked\r\neth0", time.Hour)
	obs = &recorder{}
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, HostLocalDataDir: data,
		ResyncInterval: time.Hour, Runtime: &listedRuntime{}, Observer: obs, DryRun: true, Logger: c.logs.Logger()})
	require.NoError(t, err)
	return c, data, obs, coll
}

// oneRound runs one round of the reservations' sweep (Resync's first) and
// answers the page of ip once it is recorded.
func oneRound(t *testing.T, coll *cni.Collector, ip string) cni.AddressStatus {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coll.Resync(ctx, &tracker{}) }()
	var st cni.AddressStatus
	require.Eventually(t, func() bool {
		st = askAddress(t, coll.AddressHandler(), ip)
		return st.ReservationsRead != nil
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	return st
}

// ReservationStatus.State "reported" is "its network's config is gone:
// never touched", and the Observer is told of each one reported: a
// reservation whose network's config is being written is neither
// reported nor freed, but kept by no row, and says why.
func TestAReservationOfANetworkWhoseConfigIsBeingWrittenIsKeptByNoRow(t *testing.T) {
	c, _, obs, coll := reservationNode(t)
	halfConfig(t, c.conf)
	st := oneRound(t, coll, "10.1.0.9")
	require.Len(t, st.Reservations, 1)
	r := st.Reservations[0]
	assert.Equal(t, "kept", r.State)
	assert.Equal(t, -1, r.Decision.Row, "not row 12: its config is not gone")
	assert.Equal(t, "", r.Decision.Reason)
	assert.Contains(t, r.Decision.Why, "being written")
	assert.Zero(t, obs.get("reported podnet "+cni.ReasonConfigGone))
	assert.Empty(t, coll.WouldFree())
}

// ReasonConfigGone: "no config in Options.ConfDir names the reservation's
// network": a file of ConfDir that is whole JSON and no network's config
// (a note an operator left) is no config being written, and the
// reservation of a network with no config is reported all the same.
func TestAWholeFileThatIsNoNetworkDoesNotStopConfigGoneReports(t *testing.T) {
	c, _, obs, coll := reservationNode(t)
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "99-notes.json"), []byte(`{"owner":"platform team"}`), 0o644))
	st := oneRound(t, coll, "10.1.0.9")
	require.Len(t, st.Reservations, 1)
	r := st.Reservations[0]
	assert.Equal(t, "reported", r.State)
	assert.Equal(t, 12, r.Decision.Row)
	assert.Equal(t, 1, obs.get("reported podnet "+cni.ReasonConfigGone), "the page and the Observer agree")
	assert.Empty(t, st.Unread)
}

// AddressStatus.Attachments are "the entries of libcni's cache ... whose
// cached result holds the address": one the Collector never DELs (of
// another runtime, with no pod's arguments; one whose config is of another
// network than its own) holds it all the same, and the page tells it and
// why it is never touched.
func TestTheAddressPageTellsCacheEntriesItNeverTouches(t *testing.T) {
	c := newCacheDir(t)
	entry := func(file, network, confNetwork string, args [][2]string, ip string) {
		conf := `{"cniVersion":"1.1.0","name":"` + confNetwork + `","plugins":[{"type":"logger"}]}`
		b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": "sb-" + file, "ifName": "eth0", "networkName": network,
			"config": []byte(conf), "cniArgs": args,
			"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": ip + "/24"}}}})
		require.NoError(t, err)
		c.writeRaw(network+"-sb-"+file+"-eth0", b, time.Hour)
	}
	entry("vm", "podnet", "podnet", [][2]string{{"IgnoreUnknown", "1"}}, "10.1.0.7")
	entry("other", "podnet", "othernet", [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", "web"}, {"K8S_POD_UID", "uid-web"}}, "10.1.0.8")
	h := c.collector().AddressHandler()

	st := askAddress(t, h, "10.1.0.7")
	require.Len(t, st.Attachments, 1, "the entry of no pod holds it")
	a := st.Attachments[0]
	assert.Equal(t, "sb-vm", a.ContainerID)
	assert.Equal(t, "podnet-sb-vm-eth0", a.File)
	assert.Contains(t, a.NeverTouched, "K8S_POD_UID")

	st = askAddress(t, h, "10.1.0.8")
	require.Len(t, st.Attachments, 1, "the unusable entry holds it")
	a = st.Attachments[0]
	assert.Equal(t, "uid-web", a.PodUID)
	assert.Contains(t, a.NeverTouched, "othernet")
}

// AddressStatus.Reservations are "host-local's reservations of the
// address": one in a network's directory that is a link, which the
// Collector never touches (host-local's DEL does not release through it),
// holds its address all the same, and the page tells it.
func TestTheAddressPageTellsReservationsItNeverTouches(t *testing.T) {
	c, data, _, coll := reservationNode(t)
	conf := `{"cniVersion":"1.1.0","name":"linked","plugins":[{"type":"logger","ipam":{"type":"host-local","dataDir":"` + data + `"}}]}`
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "20-linked.conflist"), []byte(conf), 0o644))
	elsewhere := filepath.Join(t.TempDir(), "linked")
	writeAged(t, filepath.Join(elsewhere, "10.2.0.4"), "sb-x\r\neth0", time.Hour)
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(data, "linked")))
	st := oneRound(t, coll, "10.2.0.4")
	require.Len(t, st.Reservations, 1)
	r := st.Reservations[0]
	assert.Equal(t, "never touched", r.State)
	assert.Equal(t, "sb-x", r.ContainerID)
	assert.Equal(t, -1, r.Decision.Row)
	assert.Contains(t, r.Decision.Why, "link")
}
