package cni

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
)

// writeFile writes b to path, its directories made, with its modification
// time age ago.
func writeFile(t *testing.T, path, b string, age time.Duration) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(b), 0o600))
	when := time.Now().Add(-age)
	require.NoError(t, os.Chtimes(path, when, when))
}

// host-local's files, as backend/disk writes them: a reservation per
// address (container ID, "\r\n", interface), its lock and the last
// address of each range; what is not a reservation is passed over, and
// what cannot be one is skipped with why.
func TestReadReservationsReadsHostLocalsFiles(t *testing.T) {
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "podnet", "10.1.0.2"), "abc123\r\neth0", time.Hour)
	writeFile(t, filepath.Join(data, "podnet", "fd00::3"), "def456\r\nnet1", time.Minute)
	writeFile(t, filepath.Join(data, "podnet", "lock"), "", 0)
	writeFile(t, filepath.Join(data, "podnet", "last_reserved_ip.0"), "10.1.0.2", 0)
	writeFile(t, filepath.Join(data, "podnet", "notes.txt"), "not an address", 0)
	writeFile(t, filepath.Join(data, "podnet", "10.1.0.4"), "", 0)                  // being written
	writeFile(t, filepath.Join(data, "podnet", "10.1.0.5"), "legacy789", 0)         // before v0.8: no interface
	writeFile(t, filepath.Join(data, "other", "10.2.0.2"), "ghi789\r\neth0\r\n", 0) // a trailing line break
	writeFile(t, filepath.Join(data, "stray-file"), "x", 0)
	require.NoError(t, os.Symlink(filepath.Join(data, "podnet", "10.1.0.2"), filepath.Join(data, "other", "10.2.0.9")))

	rs, skips, err := readReservations(data)
	require.NoError(t, err)
	type got struct{ Network, IP, ContainerID, IfName string }
	var all []got
	for _, r := range rs {
		require.Equal(t, data, r.DataDir)
		require.Equal(t, filepath.Join(data, r.Network, r.IP), r.Path())
		require.WithinDuration(t, time.Now(), r.Reserved, 2*time.Hour)
		all = append(all, got{r.Network, r.IP, r.ContainerID, r.IfName})
	}
	require.ElementsMatch(t, []got{
		{"podnet", "10.1.0.2", "abc123", "eth0"},
		{"podnet", "fd00::3", "def456", "net1"},
		{"other", "10.2.0.2", "ghi789", "eth0"},
	}, all)
	var skipped []string
	for _, s := range skips {
		skipped = append(skipped, s.File)
	}
	require.ElementsMatch(t, []string{
		filepath.Join(data, "podnet", "10.1.0.4"),
		filepath.Join(data, "podnet", "10.1.0.5"),
		filepath.Join(data, "other", "10.2.0.9"),
		filepath.Join(data, "podnet", "notes.txt"), // holds a word alone: a DEL of a container of that ID may remove it
		// holds an address alone: a DEL of a container named as that address (libcni takes one) may remove it
		filepath.Join(data, "podnet", "last_reserved_ip.0"),
	}, skipped)
	for _, r := range rs {
		if r.IP == "10.1.0.2" {
			require.WithinDuration(t, time.Now().Add(-time.Hour), r.Reserved, time.Minute, "the file's modification time")
		}
	}
}

func TestReadReservationsOfADataDirThatDoesNotExist(t *testing.T) {
	rs, skips, err := readReservations(filepath.Join(t.TempDir(), "none"))
	require.NoError(t, err)
	require.Empty(t, rs)
	require.Empty(t, skips)
}

// A data directory that is a link to nothing the collector sees (a path
// its pod does not mount) may hold host-local's reservations on the node:
// it is no empty one, and the address page names it among those unread.
func TestADataDirLinkedToNothingIsUnreadNotEmpty(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "data")
	require.NoError(t, os.Symlink(filepath.Join(dir, "not-mounted"), link))
	_, _, err := readReservations(link)
	require.ErrorContains(t, err, "a link to nothing the collector sees")

	h := newHostLocal(Options{ConfDir: t.TempDir(), HostLocalDataDir: link}, logr.Discard())
	v, err := h.read()
	require.NoError(t, err)
	require.Len(t, v.blindSkips, 1, "told as unread")
	require.Equal(t, link, v.blindSkips[0].File)
}

// The networks of a config directory whose plugins run host-local, in a
// chained conflist or as a single plugin's .conf, with the data directory
// each sets or the default; the first file in name order wins a name.
func TestHostLocalNetworksFindsHostLocalAndItsDataDir(t *testing.T) {
	conf := t.TempDir()
	writeFile(t, filepath.Join(conf, "10-podnet.conflist"), `{"cniVersion":"1.1.0","name":"podnet","plugins":[
		{"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/16"}]],"dataDir":"/data/a"}},
		{"type":"portmap","capabilities":{"portMappings":true}}]}`, 0)
	writeFile(t, filepath.Join(conf, "20-podnet.conflist"), `{"cniVersion":"1.1.0","name":"podnet","plugins":[
		{"type":"bridge","ipam":{"type":"host-local","dataDir":"/data/shadowed"}}]}`, 0)
	writeFile(t, filepath.Join(conf, "30-single.conf"), `{"cniVersion":"1.0.0","name":"single","type":"macvlan","master":"eth0",
		"ipam":{"type":"host-local","subnet":"10.3.0.0/24"}}`, 0)
	writeFile(t, filepath.Join(conf, "40-never.conflist"), `{"cniVersion":"1.1.0","name":"never","disableGC":true,"plugins":[
		{"type":"host-local","ipam":{"dataDir":"/data/b","subnet":"10.4.0.0/24"}}]}`, 0)
	writeFile(t, filepath.Join(conf, "50-single-never.conf"), `{"cniVersion":"1.0.0","name":"single-never","type":"ptp","disableGC":true,
		"ipam":{"type":"host-local","subnet":"10.5.0.0/24"}}`, 0)
	writeFile(t, filepath.Join(conf, "60-dhcp.conflist"), `{"cniVersion":"1.1.0","name":"dhcp","plugins":[{"type":"bridge","ipam":{"type":"dhcp"}}]}`, 0)
	writeFile(t, filepath.Join(conf, "70-broken.conflist"), `{"cniVersion":"1.1.0","name":"broken","plugins":[`, 0) // being written: unread
	// Named twice: the runtime loads the first file, and the second's disableGC still keeps the network.
	writeFile(t, filepath.Join(conf, "80-twice.conflist"), `{"cniVersion":"1.1.0","name":"twice","plugins":[
		{"type":"host-local","ipam":{"dataDir":"/data/c","subnet":"10.8.0.0/24"}}]}`, 0)
	writeFile(t, filepath.Join(conf, "90-twice.conflist"), `{"cniVersion":"1.1.0","name":"twice","disableGC":true,"plugins":[
		{"type":"host-local","ipam":{"dataDir":"/data/shadowed","subnet":"10.8.0.0/24"}}]}`, 0)
	writeFile(t, filepath.Join(conf, "README"), `{"cniVersion":"1.1.0","name":"readme","plugins":[{"type":"host-local"}]}`, 0)

	nets, _, err := hostLocalNetworks(conf, "/default")
	require.NoError(t, err)
	require.Len(t, nets, 5)
	require.Equal(t, []string{"/data/a"}, nets["podnet"].DataDirs)
	require.Len(t, nets["podnet"].List.Plugins, 2, "the whole chain, which a DEL runs")
	require.False(t, nets["podnet"].Never)
	require.Equal(t, []string{"/default"}, nets["single"].DataDirs)
	require.Len(t, nets["single"].List.Plugins, 1)
	require.Equal(t, "macvlan", nets["single"].List.Plugins[0].Network.Type)
	require.Equal(t, []string{"/data/b"}, nets["never"].DataDirs)
	require.True(t, nets["never"].Never)
	require.True(t, nets["single-never"].Never)
	require.Equal(t, []string{"/data/c"}, nets["twice"].DataDirs, "the first file's, which the runtime loads")
	require.True(t, nets["twice"].Never, "a network any config names with disableGC is never touched")
	keep, writing, err := disableGCNetworks(conf)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"never": true, "single-never": true, "twice": true}, keep,
		"the cache's attachments and host-local's reservations are kept on the same networks")
	require.Equal(t, map[string]string{"broken": filepath.Join(conf, "70-broken.conflist")}, writing,
		"a config being written is unread, not disableGC: its network is kept by no row")
	_, hlWriting, err := hostLocalNetworks(conf, "/default")
	require.NoError(t, err)
	require.Equal(t, writing, hlWriting)

	none, _, err := hostLocalNetworks(filepath.Join(conf, "missing"), "/default")
	require.NoError(t, err)
	require.Empty(t, none)
}

// A dry run tells each reservation it would free once while its file holds
// it, whatever the rounds between would free, could not read or did not
// read; once seen gone, or held for another container, it is new.
func TestWouldFreeTellsEachReservationOnceWhileItsFileHoldsIt(t *testing.T) {
	h := &hostLocal{}
	r := Reservation{Network: "net", DataDir: "/data", IP: "10.0.0.5", ContainerID: "c1", IfName: "eth0"}
	other := r
	other.ContainerID = "c2"
	read := func(rs ...Reservation) *reservationView { return &reservationView{rs: rs, read: []string{"/data"}} }
	for i, round := range []struct {
		would, fresh []Reservation
		read         *reservationView
	}{
		{would: []Reservation{r}, read: read(r), fresh: []Reservation{r}},
		{read: read(r)}, // the runtime failed: it would free nothing, and the file holds it
		{would: []Reservation{r}, read: read(r)},
		{read: nil}, // nothing could be read (the cache, or ConfDir)
		{read: &reservationView{read: []string{"/data"}, blind: []string{"/data"}}},     // the data directory could not be read
		{read: &reservationView{read: []string{"/data"}, blind: []string{"/data/net"}}}, // nor the network's
		{read: &reservationView{read: []string{"/other"}}},                              // no config names /data this round
		{would: []Reservation{r}, read: read(r)},
		{read: read()}, // gone
		{would: []Reservation{r}, read: read(r), fresh: []Reservation{r}},
		{would: []Reservation{other}, read: read(other), fresh: []Reservation{other}}, // reserved anew
	} {
		require.Equal(t, round.fresh, h.wouldFree(round.would, round.read), "round %d", i+1)
	}
}

// A config being written names its network by its top-level "name" only
// when it is read for sure: cut before it, cut inside it, cut where a key
// follows a comma, or cut inside a second one (which wins, whatever it
// holds; a key cut short that is written with an escape may be one), it
// names none.
func TestTopLevelNameOfAConfigCutShort(t *testing.T) {
	for _, tc := range []struct {
		b    string
		name string
		ok   bool
	}{
		{`{"cniVersion":"1.0.0","name":"a","plugins":[{"name":"x"`, "a", true},
		{`{"cniVersion":"1.0.0","plugins":[{"name":"x"}],"na`, "", false},
		{`{"cniVersion":"1.0.0","name":"a`, "", false},
		{`{"name":"a","plugins":[],"name":"b`, "", false},
		{`{"name":"a","plugins":[],"name":"b"`, "", false},
		{`{"name":"a","plugins":[],"name":"a"`, "a", true},
		{`{"name":"a","na`, "", false},
		{`{"name":"a",`, "", false}, // a key follows, which may be "name" again
		{`{"name":"a","plugins":[] ,`, "", false},
		{`{"name":"a","plugins":[]`, "a", true},
		{`{"name":"a", "`, "", false},
		{`{"name":"a","plugins":[],"cni`, "a", true},
		{`{"name":"a","plugins":[],"na\u006d`, "", false}, // a key written with an escape may be "name" again
		{`{"name":"a","plugins":[],"\u006e`, "", false},
		{`{"name":"a","plugins":[],"na\u006de":"b"}`, "", false}, // whole: "name" twice, two values
		{`{"name":"a","plugins":[],"cni\u0056ersion":"1.0.0"`, "a", true},
	} {
		name, ok := topLevelName([]byte(tc.b))
		require.Equal(t, tc.name, name, tc.b)
		require.Equal(t, tc.ok, ok, tc.b)
	}
}

// docs/sdk/cni-freeing.md: a reservation is read as host-local's own DEL reads it (white space around the whole read
// past), so that what the collector frees is what that DEL releases, and a file otherwise written is never touched.
// The real host-local's DEL of container c21, interface eth0, is run on files written every way: it removes exactly
// those read as c21's on eth0.
func TestAReservationIsReadAsHostLocalsDELReadsIt(t *testing.T) {
	plugins, _ := filepath.Abs(cmp.Or(os.Getenv("CNI_PLUGINS_DIR"), "../../bin/cni"))
	hostLocal := filepath.Join(plugins, "host-local")
	if _, err := os.Stat(hostLocal); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no host-local plugin: %v (make cni-plugins)", err)
		}
		t.Skipf("no host-local plugin: %v (make cni-plugins)", err)
	}
	data := t.TempDir()
	files := map[string]string{
		"10.1.0.2": "c21\r\neth0",        // as host-local writes it
		"10.1.0.3": " c21\r\neth0\n",     // white space around the whole
		"10.1.0.4": "\tc21\r\neth0 \r\n", // and more
		"10.1.0.5": "c21 \r\neth0",       // white space inside
		"10.1.0.6": "c21\r\n eth0",
		"10.1.0.7": "c21\neth0", // another line break
		"10.1.0.8": "c21\r\neth1",
		"10.1.0.9": "c2\r\neth0",
	}
	for ip, b := range files {
		writeFile(t, filepath.Join(data, "hlnet", ip), b, time.Hour)
	}
	read := map[string]bool{} // read as c21's on eth0
	for ip := range files {
		r, skip, gone := readReservation(data, "hlnet", ip)
		require.False(t, gone)
		read[ip] = skip == nil && r.ContainerID == "c21" && r.IfName == "eth0"
	}
	cmd := exec.Command(hostLocal)
	cmd.Env = []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=c21", "CNI_IFNAME=eth0", "CNI_PATH=" + plugins}
	cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"hlnet","type":"bridge",
"ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/28"}]],"dataDir":%q}}`, data))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "host-local's DEL: %s", out)
	for ip := range files {
		_, err := os.Lstat(filepath.Join(data, "hlnet", ip))
		released := errors.Is(err, fs.ErrNotExist)
		require.Equal(t, released, read[ip], "%s (%q): host-local's DEL released it: %v; the collector reads it as c21's on eth0: %v",
			ip, files[ip], released, read[ip])
	}
}
