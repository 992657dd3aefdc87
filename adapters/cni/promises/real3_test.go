package promises_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Holds (private namespaces only): the DEL gets the cached namespace path only when it is a
// bind-mounted nsfs outside /proc, not a link: a link to one, /proc/self/ns/net, and a plain file
// all give "".
func TestAuditHoldsTrustedNetnsOnly(t *testing.T) {
	if os.Getuid() != 0 || os.Getenv("AUDIT7_PRIVATE_NS") != "1" {
		t.Skip("needs root, in private network and mount namespaces (AUDIT7_PRIVATE_NS=1)")
	}
	e := newEnv(t)
	log := filepath.Join(t.TempDir(), "netns.log")
	writeFile(t, e.plugins, "nslog", "#!/bin/sh\n[ \"$CNI_COMMAND\" = DEL ] && echo \"$CNI_CONTAINERID=$CNI_NETNS\" >> "+log+"\nexit 0\n")
	os.Chmod(filepath.Join(e.plugins, "nslog"), 0o755)
	pinned := filepath.Join(e.netnsDir, "pinned")
	os.WriteFile(pinned, nil, 0o644)
	if out, err := exec.Command("unshare", "--net="+pinned, "true").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	defer unix.Unmount(pinned, unix.MNT_DETACH) // mount(2), not umount(8): nothing written to the host's /run/mount
	link := filepath.Join(e.netnsDir, "link")
	os.Symlink(pinned, link)
	plain := e.netns("plain", true)
	cfg := `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"nslog"}]}`
	for id, p := range map[string]string{"sbpinned": pinned, "sblink": link, "sbproc": "/proc/self/ns/net", "sbplain": plain} {
		e.writeEntry(entryOpt{network: "n", sandbox: id, uid: uidA, netns: p, config: cfg})
	}
	// Each sandbox is listed stopped: freed whatever its namespace tells.
	rt := &fakeRuntime{ignoreFilter: true}
	for _, id := range []string{"sbpinned", "sblink", "sbproc", "sbplain"} {
		rt.sbs = append(rt.sbs, sandbox(id, uidA, 1, timeNow()))
	}
	c := e.collector(rt, 0)
	if err := c.DestroyPU(context.Background(), goneDefault(uidA)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	got := string(b)
	for id, want := range map[string]string{"sbpinned": pinned, "sblink": "", "sbproc": "", "sbplain": ""} {
		if !strings.Contains(got, fmt.Sprintf("%s=%s\n", id, want)) {
			t.Errorf("%s: want netns %q; DELs:\n%s", id, want, got)
		}
	}
}
