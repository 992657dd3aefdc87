package promises_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const trustEnv = "AUDIT6_NETNS_TRUST_INNER"

// Hold: doc.go "It never runs a DEL in a network namespace it cannot
// trust: the cached path is passed only when it is a bind-mounted nsfs
// outside /proc, not a link". Run in a private mount namespace (unshare
// -m), where the test bind-mounts its own network namespace onto a file.
func TestAuditHoldsDelNetnsOnlyTrusted(t *testing.T) {
	if dirs := os.Getenv(trustEnv); dirs != "" {
		var e env
		if err := json.Unmarshal([]byte(dirs), &e); err != nil {
			t.Fatal(err)
		}
		e.t = t
		pinned := filepath.Join(e.netnsDir, "pinned")
		if err := os.WriteFile(pinned, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("/proc/self/ns/net", pinned, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount: %v", err)
		}
		link := filepath.Join(e.netnsDir, "link")
		_ = os.Symlink(pinned, link)
		plain := filepath.Join(e.netnsDir, "plain")
		_ = os.WriteFile(plain, nil, 0o644)
		rt := &fakeRuntime{}
		var sbs = map[string]string{"sbPinned": pinned, "sbLink": link, "sbProc": "/proc/" + strconv.Itoa(os.Getpid()) + "/ns/net", "sbPlain": plain}
		for id, ns := range sbs {
			e.write("net1", id, "uid-"+id, ns, time.Time{})
			rt.sbs = append(rt.sbs, sb(id, "uid-"+id, false, time.Now()))
		}
		c := e.collector(rt, 0)
		for id := range sbs {
			if err := c.DestroyPU(context.Background(), gone("uid-"+id)); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	e := newEnv(t)
	dirs, _ := json.Marshal(map[string]string{"Cache": e.cache, "Plugins": e.plugins, "Conf": e.conf, "NetnsDir": e.netnsDir})
	cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0], "-test.run=^TestAuditHoldsDelNetnsOnlyTrusted$", "-test.count=1")
	cmd.Env = append(os.Environ(), trustEnv+"="+string(dirs))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("inner: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(filepath.Join(e.plugins, "calls.log"))
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 {
			got[f[1]] = strings.TrimPrefix(f[3], "netns=")
		} else if len(f) == 3 {
			got[f[1]] = ""
		}
	}
	want := map[string]string{"sbPinned": filepath.Join(e.netnsDir, "pinned"), "sbLink": "", "sbProc": "", "sbPlain": ""}
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			t.Errorf("%s: DEL netns %q (ran %v), want %q; log:\n%s", id, g, ok, w, b)
		}
	}
}
