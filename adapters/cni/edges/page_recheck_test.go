package edges_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/podsweeper/podsweeper/internal/testcni"
	"github.com/podsweeper/podsweeper/ports"
)

// TestThePageTellsAKeepDecidedAgainBeforeTheDEL: a gone pod's sandbox (its namespace gone: row 4) holds net1 and
// net2. While net1's DEL runs, net2's config in ConfDir comes to say disableGC: the verdict, asked again right before
// net2's DEL, keeps it. Later the config says it no more. The page tells net2's attachment as still held with the
// sandbox's last decision "free" (row 4), and nothing of the keep the collector decided right before its DEL.
func TestThePageTellsAKeepDecidedAgainBeforeTheDEL(t *testing.T) {
	e := newEnv(t)
	net2 := func(extra string) string {
		return fmt.Sprintf(`{"cniVersion":"1.0.0","name":"net2"%s,"plugins":[{"type":"sweep","ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.1.0.0/16"}]]}}]}`, extra, e.data)
	}
	staged := filepath.Join(t.TempDir(), "20-net2.conflist")
	testcni.Write(t, staged, net2(`,"disableGC":true`))
	e.sweepPlugin(`[ -f ` + staged + ` ] && cp ` + staged + ` ` + e.conf + `/.tmp && mv ` + e.conf + `/.tmp ` + e.conf + `/20-net2.conflist && rm -f ` + staged)
	e.netConf("10-net1.conflist", "net1", "")
	testcni.Write(t, filepath.Join(e.conf, "20-net2.conflist"), net2(""))
	gone := filepath.Join(e.netnsDir, "gone")
	e.cacheEntry(entry{Network: "net1", ID: "aaa", UID: "uid-a", NS: "ns", Name: "pod-a", IP: "10.1.0.60", NetNS: gone})
	e.cacheEntry(entry{Network: "net2", ID: "aaa", UID: "uid-a", NS: "ns", Name: "pod-a", IP: "10.1.0.61", NetNS: gone})
	l := &logs{}
	c := newCollector(t, e.opts(l))
	err := c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid-a", Pod: podA, SandboxID: "aaa", Reason: ports.ReasonPodGone})
	if err != nil {
		t.Fatalf("DestroyPU: %v", err)
	}
	if !l.has("attachment kept: its network's config in ConfDir says disableGC now") {
		t.Fatalf("net2 was not kept by the recheck; log:\n%s", l)
	}
	if _, err := os.Stat(filepath.Join(e.cache, "results", "net2-aaa-eth0")); err != nil {
		t.Fatal("net2's entry is gone")
	}
	testcni.Write(t, filepath.Join(e.conf, "20-net2.conflist"), net2("")) // disableGC taken back
	st := testcni.Address(t, c, "10.1.0.61")
	if len(st.Attachments) != 1 {
		t.Fatalf("want net2's attachment told: %s", dump(st))
	}
	d := st.Attachments[0].Decision
	if d != nil && d.Verdict == "free" && !st.Attachments[0].DisableGC {
		t.Errorf("net2's attachment, kept by the verdict asked again right before its DEL, is told with last decision row %d %q (%s): the keep is not told\n%s",
			d.Row, d.Verdict, d.Why, dump(st))
	}
}
