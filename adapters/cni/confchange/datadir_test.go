package confchange_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// swapPlugin: on DEL, moves every file of <root>/swap into ConfDir (a CNI installer rewriting the network's config
// while the round runs).
const swapPlugin = `#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  cat >/dev/null
  echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'
  exit 0
fi
cat >/dev/null
d="$(dirname "$0")/.."
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME $CNI_NETNS" >> "$d/del.log"
for f in "$d"/swap/*; do [ -e "$f" ] && mv "$f" "$d/conf/"; done
exit 0
`

func hostLocalJSON(dataDir, subnet string) string {
	return `{"type":"host-local","ipam":{"type":"host-local","dataDir":"` + dataDir + `","ranges":[[{"subnet":"` + subnet + `"}]]}}`
}

// setupSwap: net1's config runs swap and host-local in e.data; d3/net1/10.9.0.77 is a link naming container resvB and
// eth0 (host-local's DEL of resvB in d3 would remove the link). from: the config names d3 from the start.
func setupSwap(t *testing.T, e *env, fromStart bool) (a, b, link string) {
	e.withHostLocal("net1", "") // copies host-local
	if err := os.WriteFile(filepath.Join(e.plugins, "swap"), []byte(swapPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	d3 := filepath.Join(e.root, "data3")
	withD3 := `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"swap"},` + hostLocalJSON(e.data, "10.9.0.0/24") + `,` + hostLocalJSON(d3, "10.9.0.0/24") + `]}`
	first := `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"swap"},` + hostLocalJSON(e.data, "10.9.0.0/24") + `]}`
	if fromStart {
		first = withD3
	}
	if err := os.WriteFile(filepath.Join(e.conf, "10-net1.conflist"), []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	swap := filepath.Join(e.root, "swap")
	os.MkdirAll(swap, 0o755)
	if !fromStart {
		if err := os.WriteFile(filepath.Join(swap, "10-net1.conflist"), []byte(withD3), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	a = e.reservation("net1", "10.9.0.5", "resva001", "eth0", old)
	b = e.reservation("net1", "10.9.0.6", "resvb002", "eth0", old)
	// The link, in d3/net1, to a file elsewhere naming resvb002 and eth0.
	elsewhere := filepath.Join(e.root, "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	target := filepath.Join(elsewhere, "target")
	os.WriteFile(target, []byte("resvb002\r\neth0"), 0o644)
	os.Chtimes(target, old, old)
	os.MkdirAll(filepath.Join(d3, "net1"), 0o755)
	link = filepath.Join(d3, "net1", "10.9.0.77")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	e.rt.set(func() ([]*runtimeapi.PodSandbox, error) { return nil, nil })
	return a, b, link
}

// cni-freeing.md:109 (row 16): a reservation is kept when "host-local's DEL of it would remove a file the collector
// never touches (a link ... in the network's directory naming its container and interface ...)": "a file never
// touched stays so"; cni-freeing.md:113: "Every DEL of a reservation is decided on what is read right before it ...
// right before each DEL, ConfDir again"; doc.go:143-146: a reservation in a directory that is a link is "never
// touched". The network's config is rewritten while the round runs (by the first DEL here) to run host-local in a
// second data directory too, which holds a link naming the second reservation's container and interface. The second
// DEL is decided on the new config, but not on what its new data directory holds: it runs, and host-local removes
// the link.
func TestALinkInADataDirectoryNamedMidRoundIsNeverTouched(t *testing.T) {
	e := newEnv(t)
	a, b, link := setupSwap(t, e, false)
	c := e.collector(nil)
	resyncUntil(t, c, 5*time.Second, func() bool { return !exists(a) && !exists(b) })
	dl, _ := os.ReadFile(e.delLog)
	t.Logf("DELs run:\n%s", dl)
	if exists(a) {
		t.Fatalf("setup: the first reservation was not freed")
	}
	if !exists(link) {
		t.Fatalf("the link %s, a file the collector never touches, was removed by the DEL of reservation %s (still there: %v)", link, b, exists(b))
	}
}

// The same, the config naming the second data directory from the start: the link keeps the reservation (row 16).
func TestALinkInADataDirectoryReadKeepsItsReservation(t *testing.T) {
	e := newEnv(t)
	a, b, link := setupSwap(t, e, true)
	c := e.collector(nil)
	resyncUntil(t, c, 2*time.Second, func() bool { return !exists(a) && (!exists(b) || !exists(link)) })
	time.Sleep(200 * time.Millisecond)
	if !exists(link) || !exists(b) {
		t.Fatalf("link there: %v, reservation b there: %v (a there: %v)", exists(link), exists(b), exists(a))
	}
}
