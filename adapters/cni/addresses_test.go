package cni_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// AddressHandler tells, of one address, what holds it and what the
// Collector decided, and decides nothing itself: the attachment of a live
// pod that was never asked to be freed; the attachment of a gone pod the
// engine had freed (its DEL ran, libcni removed the entry: the free is
// remembered, with its row and reason); a host-local reservation the cache
// accounts for (kept, row 16); a leaked one (row 18) that a round freed
// with a DEL that released it; one whose DEL released nothing (free
// failed); and an address no one holds. A round that needs not ask the
// runtime says so of the row it took (14).
func TestAddressHandlerTellsWhatHoldsAnAddressAndWhatWasDecided(t *testing.T) {
	c := newCacheDir(t)
	data := filepath.Join(t.TempDir(), "networks")
	// A plugin that releases host-local's reservations of its container (as host-local's DEL does), but those of
	// the container "stuck".
	script := fmt.Sprintf("#!/bin/sh\necho \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> %s\n"+
		"[ \"$CNI_COMMAND\" = DEL ] && [ \"$CNI_CONTAINERID\" != stuck ] && for f in %s/podnet/*; do "+
		"[ \"$(head -n1 \"$f\" | tr -d '\\r')\" = \"$CNI_CONTAINERID\" ] && rm -f \"$f\"; done\nexit 0\n", c.calls, data)
	require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "releaser"), []byte(script), 0o755))
	conf := `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"releaser","ipam":{"type":"host-local","dataDir":"` + data + `"}}]}`
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "10-podnet.conflist"), []byte(conf), 0o644))
	entry := func(sandbox, uid, name, ip string) {
		b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": sandbox, "ifName": "eth0", "networkName": "podnet",
			"config": []byte(conf), "cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", name}, {"K8S_POD_UID", uid}},
			"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": ip + "/24", "gateway": "10.1.0.1"}}}})
		require.NoError(t, err)
		c.writeRaw("podnet-"+sandbox+"-eth0", b, time.Hour)
	}
	entry("sb-live", "uid-live", "web", "10.1.0.2")
	entry("sb-gone", "uid-gone", "gone", "10.1.0.3")
	writeAged(t, filepath.Join(data, "podnet", "10.1.0.2"), "sb-live\r\neth0", time.Hour)
	writeAged(t, filepath.Join(data, "podnet", "10.1.0.9"), "leaked\r\neth0", time.Hour)
	writeAged(t, filepath.Join(data, "podnet", "10.1.0.10"), "stuck\r\neth0", time.Hour)
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, HostLocalDataDir: data,
		ResyncInterval: time.Minute, Runtime: &listedRuntime{}, Logger: c.logs.Logger()})
	require.NoError(t, err)
	h := coll.AddressHandler()
	ask := func(ip string) cni.AddressStatus {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip="+ip, nil))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var st cni.AddressStatus
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
		return st
	}

	// Before anything is decided: the attachments, no decision, no round yet.
	st := ask("10.1.0.2")
	require.Len(t, st.Attachments, 1)
	a := st.Attachments[0]
	assert.Equal(t, cni.AttachmentStatus{Network: "podnet", ContainerID: "sb-live", IfName: "eth0", PodNamespace: "apps", PodName: "web",
		PodUID: "uid-live", Written: a.Written}, a)
	assert.Nil(t, st.ReservationsRead, "no round yet")

	// The gone pod's PU destroyed: row 11 (not listed, its namespace tells nothing), freed with its DEL.
	require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-gone",
		Pod: types.NamespacedName{Namespace: "apps", Name: "gone"}, SandboxID: "sb-gone", Reason: ports.ReasonPodGone}))
	st = ask("10.1.0.3")
	assert.Empty(t, st.Attachments, "libcni removed the entry its DEL freed")
	require.Len(t, st.Freed, 1)
	f := st.Freed[0]
	assert.False(t, f.Reservation)
	assert.Equal(t, []string{"sb-gone", "apps", "gone", "uid-gone"}, []string{f.ContainerID, f.PodNamespace, f.PodName, f.PodUID})
	assert.Equal(t, 11, f.Decision.Row)
	assert.Equal(t, "free", f.Decision.Verdict)
	assert.Equal(t, string(ports.ReasonPodGone), f.Decision.Reason)

	// One round of the reservations' sweep.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- coll.Resync(ctx, &tracker{}) }()
	require.Eventually(t, func() bool {
		st, leaked := ask("10.1.0.10"), ask("10.1.0.9")
		return len(st.Reservations) == 1 && st.Reservations[0].State == "free failed" &&
			len(leaked.Reservations) == 1 && leaked.Reservations[0].State == "freed"
	}, 10*time.Second, 20*time.Millisecond, "the round tried the stuck and the leaked reservations")

	st = ask("10.1.0.2")
	require.Len(t, st.Attachments, 1)
	require.Len(t, st.Reservations, 1)
	r := st.Reservations[0]
	assert.Equal(t, "kept", r.State)
	assert.Equal(t, 16, r.Decision.Row, "the cache holds its sandbox")
	assert.Equal(t, "keep", r.Decision.Verdict)
	assert.Equal(t, filepath.Join(data, "podnet", "10.1.0.2"), r.File)
	assert.NotNil(t, st.ReservationsRead)

	st = ask("10.1.0.9")
	require.Len(t, st.Reservations, 1)
	r = st.Reservations[0]
	assert.Equal(t, "freed", r.State)
	assert.Equal(t, 18, r.Decision.Row)
	assert.Equal(t, cni.ReasonNoSandbox, r.Decision.Reason)
	assert.Equal(t, "leaked", r.ContainerID)
	require.Len(t, st.Freed, 1)
	assert.Equal(t, cni.ReasonNoSandbox, st.Freed[0].Decision.Reason)
	assert.True(t, st.Freed[0].Reservation)
	assert.Equal(t, 18, st.Freed[0].Decision.Row)
	assert.NoFileExists(t, filepath.Join(data, "podnet", "10.1.0.9"))

	st = ask("10.1.0.10")
	assert.Contains(t, st.Reservations[0].Error, "host-local still holds")

	// No one holds it; the address in another form is the same address.
	assert.Equal(t, cni.AddressStatus{IP: "10.1.0.100", ReservationsRead: ask("10.1.0.100").ReservationsRead}, ask("10.1.0.100"))
	assert.Equal(t, "10.1.0.2", ask("::ffff:10.1.0.2").IP)

	// A round in which no reservation needs the runtime does not ask it: row 14, and why it was not asked.
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, os.Remove(filepath.Join(data, "podnet", "10.1.0.10")))
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- coll.Resync(ctx, &tracker{}) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		st := ask("10.1.0.2")
		return len(st.Reservations) == 1 && st.Reservations[0].Decision.Row == 14
	}, 10*time.Second, 20*time.Millisecond, "a round that did not ask the runtime")
	assert.Contains(t, ask("10.1.0.2").Reservations[0].Decision.Why, "not asked, for no reservation of the round needed it")

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip=nope", nil))
	assert.Equal(t, http.StatusBadRequest, w.Code)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, cni.AddressPath+"?ip=10.1.0.2", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
}

// writeAged writes b to path, its directories made, with its modification
// time age ago.
func writeAged(t *testing.T, path, b string, age time.Duration) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(b), 0o600))
	when := time.Now().Add(-age)
	require.NoError(t, os.Chtimes(path, when, when))
}

// "Freed ... it remembers its last 256 frees": one free of an attachment
// with two addresses (dual-stack) is one of the 256, not two. Of 200 such
// frees, the first is still told, by either of its addresses.
func TestAddressRemembersItsLast256FreesWhateverTheirAddresses(t *testing.T) {
	c := newCacheDir(t)
	conf := `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"logger"}]}`
	const pods = 200
	for i := 0; i < pods; i++ {
		b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": fmt.Sprintf("sb-%d", i), "ifName": "eth0",
			"networkName": "podnet", "config": []byte(conf),
			"cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", fmt.Sprintf("web-%d", i)}, {"K8S_POD_UID", fmt.Sprintf("uid-%d", i)}},
			"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{
				{"address": fmt.Sprintf("10.2.%d.%d/16", i/250, i%250+2)}, {"address": fmt.Sprintf("fd00::%x/64", i+2)}}}})
		require.NoError(t, err)
		c.writeRaw(fmt.Sprintf("podnet-sb-%d-eth0", i), b, time.Hour)
	}
	coll := c.collectorWith(&listedRuntime{}, 0)
	for i := 0; i < pods; i++ {
		require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: fmt.Sprintf("uid-%d", i),
			Pod: types.NamespacedName{Namespace: "apps", Name: fmt.Sprintf("web-%d", i)}, Reason: ports.ReasonPodGone}))
	}
	h := coll.AddressHandler()
	ask := func(ip string) cni.AddressStatus {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip="+ip, nil))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var st cni.AddressStatus
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
		return st
	}
	for _, ip := range []string{"10.2.0.2", "fd00::2", "10.2.0.201", "fd00::c9"} {
		st := ask(ip)
		require.Len(t, st.Freed, 1, "%s: one free among the last 256", ip)
		assert.Equal(t, "free", st.Freed[0].Decision.Verdict)
	}
	assert.Equal(t, "sb-0", ask("fd00::2").Freed[0].ContainerID)
}

// "Decision ... nil: it was never asked to, since the Collector started":
// asked to free a gone pod's sandbox while the runtime cannot be asked,
// the Collector keeps it (DestroyPU's error), and the address page tells
// that it was asked, that it kept it, and why, decided by no row.
func TestAddressTellsADecisionOnASandboxKeptForARuntimeThatCannotBeAsked(t *testing.T) {
	c := newCacheDir(t)
	conf := `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"logger"}]}`
	b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": "sb-etcd", "ifName": "eth0", "networkName": "podnet",
		"config": []byte(conf), "cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "kube-system"}, {"K8S_POD_NAME", "etcd"}, {"K8S_POD_UID", "uid-etcd"}},
		"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": "10.3.0.6/24"}}}})
	require.NoError(t, err)
	c.writeRaw("podnet-sb-etcd-eth0", b, time.Hour)
	rt := &listedRuntime{}
	rt.set(errors.New("rpc error: code = Unavailable desc = connection refused"))
	coll := c.collectorWith(rt, 0)
	for _, dry := range []bool{true, false} {
		ev := ports.DestroyEvent{PUID: "uid-etcd", Pod: types.NamespacedName{Namespace: "kube-system", Name: "etcd"}, Reason: ports.ReasonPodGone}
		var derr error
		if dry {
			derr = coll.DryRunDestroyPU(context.Background(), ev)
		} else {
			derr = coll.DestroyPU(context.Background(), ev)
		}
		require.Error(t, derr)
		w := httptest.NewRecorder()
		coll.AddressHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip=10.3.0.6", nil))
		var st cni.AddressStatus
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
		require.Len(t, st.Attachments, 1, "kept")
		d := st.Attachments[0].Decision
		require.NotNil(t, d, "asked (dry run %v), so not \"never asked\"", dry)
		assert.Equal(t, -1, d.Row, "decided by no row")
		assert.Equal(t, "keep", d.Verdict)
		assert.Equal(t, dry, d.DryRun)
		assert.Equal(t, string(ports.ReasonPodGone), d.Reason)
		assert.Contains(t, d.Why, "the runtime could not be asked")
		assert.Contains(t, d.Why, "connection refused")
	}
	assert.True(t, c.exists("podnet-sb-etcd-eth0"))
}

// addressEntry writes a cache entry of network podnet (the logger plugin,
// or plugin) for the sandbox of the pod apps/name (uid) holding ip.
func addressEntry(t *testing.T, c *cacheDir, plugin, sandbox, uid, name, ip string) {
	t.Helper()
	conf := `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"` + plugin + `"}]}`
	b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": sandbox, "ifName": "eth0", "networkName": "podnet",
		"config": []byte(conf), "cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", name}, {"K8S_POD_UID", uid}},
		"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": ip + "/24"}}}})
	require.NoError(t, err)
	c.writeRaw("podnet-"+sandbox+"-eth0", b, time.Hour)
}

// askAddress asks h of ip, and wants 200.
func askAddress(t *testing.T, h http.Handler, ip string) cni.AddressStatus {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip="+ip, nil))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var st cni.AddressStatus
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	return st
}

// AddressHandler "answers, as JSON, the AddressStatus": while a config of
// ConfDir is being written (truncated, its name not written yet), which
// networks say disableGC cannot be told, and the cache can still be read.
// The page tells the attachment, and says in Unread which config it could
// not read; once the config is written, Unread is empty.
func TestAddressAnswersWhatItReadsWhileAConfigIsBeingWritten(t *testing.T) {
	c := newCacheDir(t)
	addressEntry(t, c, "logger", "sb-web", "uid-web", "web", "10.1.0.5")
	h := c.collector().AddressHandler()
	half := filepath.Join(c.conf, "05-installer.conflist")
	require.NoError(t, os.WriteFile(half, []byte(`{"cniVersion":"1.0.0","pl`), 0o644))
	st := askAddress(t, h, "10.1.0.5")
	require.Len(t, st.Attachments, 1, "the cache is read")
	assert.Equal(t, "sb-web", st.Attachments[0].ContainerID)
	require.Len(t, st.Unread, 1)
	assert.Contains(t, st.Unread[0], "ConfDir")
	assert.Contains(t, st.Unread[0], half)

	require.NoError(t, os.WriteFile(half, []byte(`{"cniVersion":"1.0.0","name":"installer","plugins":[{"type":"logger"}]}`), 0o644))
	st = askAddress(t, h, "10.1.0.5")
	assert.Empty(t, st.Unread)
	assert.Len(t, st.Attachments, 1)
}

// "Decision is the last decision the Collector took on its sandbox when
// the engine asked it to free it", and Row -1 "when none could decide, for
// what it decides on could not be read": asked a second time while a
// config of ConfDir is being written, the Collector keeps the sandbox, and
// the page tells that keep (row -1, and why), not the first ask's "free".
func TestAddressTellsAKeepForAConfDirThatCouldNotBeRead(t *testing.T) {
	c := newCacheDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "failer"), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	addressEntry(t, c, "failer", "sb-gone", "uid-gone", "gone", "10.1.0.5")
	rt := &listedRuntime{}
	rt.set(nil, listed("sb-gone", "uid-gone", false, time.Now().Add(-time.Hour)))
	coll := c.collectorWith(rt, 0)
	h := coll.AddressHandler()
	for _, dry := range []bool{false, true} {
		ev := ports.DestroyEvent{PUID: "uid-gone", Pod: types.NamespacedName{Namespace: "apps", Name: "gone"}, Reason: ports.ReasonPodGone}
		require.NoError(t, os.RemoveAll(filepath.Join(c.conf, "05-installer.conflist")))
		require.Error(t, coll.DestroyPU(context.Background(), ev), "the DEL fails: the entry stays")
		first := askAddress(t, h, "10.1.0.5").Attachments[0].Decision
		require.NotNil(t, first)
		require.Equal(t, "free", first.Verdict)

		require.NoError(t, os.WriteFile(filepath.Join(c.conf, "05-installer.conflist"), []byte(`{"cniVersion":"1.0.0","pl`), 0o644))
		asked := time.Now()
		if dry {
			require.Error(t, coll.DryRunDestroyPU(context.Background(), ev))
		} else {
			require.Error(t, coll.DestroyPU(context.Background(), ev))
		}
		st := askAddress(t, h, "10.1.0.5")
		require.Len(t, st.Attachments, 1, "kept")
		d := st.Attachments[0].Decision
		require.NotNil(t, d)
		assert.False(t, d.At.Before(asked), "the second ask's decision")
		assert.Equal(t, -1, d.Row, "decided by no row")
		assert.Equal(t, "keep", d.Verdict)
		assert.Equal(t, dry, d.DryRun)
		assert.Contains(t, d.Why, "ConfDir could not be read")
	}
}

// AttachmentStatus.Decision is the decision as it stands for that
// attachment: a gone pod's sandbox with one attachment in podnet and one in
// keepnet, whose config says disableGC, is freed; the page tells keepnet's
// attachment, which is never DELed, kept, not "free".
func TestAddressTellsTheDecisionOfEachAttachmentOfASandbox(t *testing.T) {
	c := newCacheDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(c.plugins, "quiet"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	confs := map[string]string{
		"podnet":  `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"quiet"}]}`,
		"keepnet": `{"cniVersion":"1.1.0","name":"keepnet","disableGC":true,"plugins":[{"type":"quiet"}]}`,
	}
	for name, conf := range confs {
		require.NoError(t, os.WriteFile(filepath.Join(c.conf, "10-"+name+".conflist"), []byte(conf), 0o644))
	}
	for name, ip := range map[string]string{"podnet": "10.1.0.3", "keepnet": "10.2.0.3"} {
		b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": "sb-gone", "ifName": "eth0", "networkName": name,
			"config": []byte(confs[name]), "cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", "gone"}, {"K8S_POD_UID", "uid-gone"}},
			"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": ip + "/24"}}}})
		require.NoError(t, err)
		c.writeRaw(name+"-sb-gone-eth0", b, time.Hour)
	}
	// An entry that is a link, never used (never touched): of keepnet, at 10.2.0.4.
	b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": "sb-gone", "ifName": "eth1", "networkName": "keepnet",
		"config": []byte(confs["keepnet"]), "cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", "gone"}, {"K8S_POD_UID", "uid-gone"}},
		"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": "10.2.0.4/24"}}}})
	require.NoError(t, err)
	elsewhere := filepath.Join(t.TempDir(), "keepnet-sb-gone-eth1")
	require.NoError(t, os.WriteFile(elsewhere, b, 0o600))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(c.dir, "results", "keepnet-sb-gone-eth1")))
	coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf,
		ResyncInterval: time.Minute, Runtime: &listedRuntime{}, Logger: c.logs.Logger()})
	require.NoError(t, err)
	_ = coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-gone", // ErrUnusableEntry: the link
		Pod: types.NamespacedName{Namespace: "apps", Name: "gone"}, SandboxID: "sb-gone", Reason: ports.ReasonPodGone})
	for _, ip := range []string{"10.2.0.3", "10.2.0.4"} {
		w := httptest.NewRecorder()
		coll.AddressHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip="+ip, nil))
		var st cni.AddressStatus
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
		require.Len(t, st.Attachments, 1, "keepnet's attachment at %s is held", ip)
		d := st.Attachments[0].Decision
		require.NotNil(t, d, "%s: the sandbox was decided on", ip)
		assert.Equal(t, "keep", d.Verdict, "%s: the attachment never DELed is told kept: %+v", ip, d)
		assert.True(t, st.Attachments[0].DisableGC, "%s: keepnet says disableGC", ip)
	}
}

// "Decision is the last decision the Collector took on its sandbox when the engine asked it to free it for this
// attachment's pod": a sandbox the cache names as two pods' (libcni's entries of two pods under one container ID),
// freed for the one pod that is gone, leaves the other pod's attachment undecided on the page, not "free".
func TestAddressTellsAnotherPodsAttachmentOfAFreedSandboxUndecided(t *testing.T) {
	c := newCacheDir(t)
	for _, p := range []struct{ uid, ifName, ip string }{{"uid-a", "eth0", "10.3.0.7"}, {"uid-b", "eth1", "10.3.0.8"}} {
		conf := `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"logger"}]}`
		b, err := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": "sb-x", "ifName": p.ifName, "networkName": "podnet",
			"config": []byte(conf), "cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", "pod-" + p.uid}, {"K8S_POD_UID", p.uid}},
			"result": map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": p.ip + "/24"}}}})
		require.NoError(t, err)
		c.writeRaw("podnet-sb-x-"+p.ifName, b, time.Hour)
	}
	coll := c.collectorListingNone()
	require.NoError(t, coll.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a",
		Pod: types.NamespacedName{Namespace: "apps", Name: "pod-uid-a"}, Reason: ports.ReasonPodGone}))
	require.False(t, c.exists("podnet-sb-x-eth0"), "pod a's attachment freed")
	require.True(t, c.exists("podnet-sb-x-eth1"), "pod b's attachment kept")
	st := askAddress(t, coll.AddressHandler(), "10.3.0.8")
	require.Len(t, st.Attachments, 1)
	require.Equal(t, "uid-b", st.Attachments[0].PodUID)
	require.Nil(t, st.Attachments[0].Decision, "pod b's attachment was never asked to be freed: %+v", st.Attachments[0].Decision)
}

// slowRuntime is a Runtime whose list takes 9 s (within its 10 s), running during once, a second into it.
type slowRuntime struct {
	listedRuntime
	during func()
}

func (r *slowRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	time.Sleep(time.Second)
	if d := r.during; d != nil {
		r.during = nil
		d()
	}
	time.Sleep(8 * time.Second)
	return r.listedRuntime.ListPodSandbox(ctx, f)
}

// AddressStatus.ReservationsRead "is when the last round read host-local's reservations": a round asks the Runtime
// after it read them, and an address host-local reserves while the Runtime answers is not in the round. The page
// tells the time of the read, before that reservation, not the time the Runtime answered.
func TestReservationsReadIsWhenTheRoundReadThem(t *testing.T) {
	c := newCacheDir(t)
	data := filepath.Join(t.TempDir(), "networks")
	conf := `{"cniVersion":"1.1.0","name":"podnet","plugins":[{"type":"logger","ipam":{"type":"host-local","dataDir":"` + data + `"}}]}`
	require.NoError(t, os.WriteFile(filepath.Join(c.conf, "10-podnet.conflist"), []byte(conf), 0o644))
	writeAged(t, filepath.Join(data, "podnet", "10.1.0.9"), "sb-old\r\neth0", time.Hour) // of no cache entry: the Runtime is asked
	synctest.Test(t, func(t *testing.T) {
		var reserved time.Time
		rt := &slowRuntime{during: func() {
			reserved = time.Now()
			writeAged(t, filepath.Join(data, "podnet", "10.1.0.10"), "sb-new\r\neth0", 0)
		}}
		rt.set(nil, listed("sb-old", "u1", true, time.Now().Add(-time.Hour)), listed("sb-new", "u2", true, time.Now()))
		coll, err := cni.New(cni.Options{CacheDir: c.dir, PluginDirs: []string{c.plugins}, ConfDir: c.conf, HostLocalDataDir: data,
			ResyncInterval: time.Minute, Runtime: rt, Logger: c.logs.Logger()})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- coll.Resync(ctx, &tracker{}) }()
		time.Sleep(10 * time.Second) // the round at Resync's start has ended
		synctest.Wait()
		h := coll.AddressHandler()
		old, young := askAddress(t, h, "10.1.0.9"), askAddress(t, h, "10.1.0.10")
		require.Len(t, old.Reservations, 1, "the round read 10.1.0.9")
		require.Empty(t, young.Reservations, "10.1.0.10 was reserved after the round read the reservations")
		require.NotNil(t, young.ReservationsRead)
		require.True(t, young.ReservationsRead.Before(reserved), "read at %v, 10.1.0.10 reserved at %v", *young.ReservationsRead, reserved)
		cancel()
		require.NoError(t, <-done)
	})
}

// AddressHandler "answers, as JSON, the AddressStatus ... What it could not read ... it says in AddressStatus.Unread,
// and answers the rest"; cni-freeing.md: it tells a cache entry the collector does not use ("neverTouched"). An entry
// whose result holds the address but that holds no config, or one that is not JSON, is told never touched: the page
// answers 200 (it panicked on the missing config).
func TestAddressTellsAnEntryWithNoConfigNeverTouched(t *testing.T) {
	for name, config := range map[string]any{"no config": nil, "a config that is not JSON": []byte("{not json")} {
		t.Run(name, func(t *testing.T) {
			c := newCacheDir(t)
			entry := map[string]any{"kind": "cniCacheV1", "containerId": "sb-odd", "ifName": "eth0", "networkName": "podnet",
				"cniArgs": [][2]string{{"K8S_POD_NAMESPACE", "apps"}, {"K8S_POD_NAME", "web"}, {"K8S_POD_UID", "uid-odd"}},
				"result":  map[string]any{"cniVersion": "1.1.0", "ips": []map[string]any{{"address": "10.5.0.9/24"}}}}
			if config != nil {
				entry["config"] = config
			}
			b, err := json.Marshal(entry)
			require.NoError(t, err)
			c.writeRaw("podnet-sb-odd-eth0", b, time.Hour)
			st := askAddress(t, c.collector().AddressHandler(), "10.5.0.9")
			require.Len(t, st.Attachments, 1)
			assert.NotEmpty(t, st.Attachments[0].NeverTouched)
			assert.Equal(t, "sb-odd", st.Attachments[0].ContainerID)
		})
	}
}
