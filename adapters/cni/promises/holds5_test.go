package promises_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Holds: only DEL is ever run (never GC, CHECK, STATUS or ADD).
func TestAuditHoldsOnlyDel(t *testing.T) {
	e := newEnv(t)
	cmds := filepath.Join(t.TempDir(), "cmds")
	writeFile(t, e.plugins, "logall", "#!/bin/sh\necho \"$CNI_COMMAND\" >> "+cmds+"\nexit 0\n")
	os.Chmod(filepath.Join(e.plugins, "logall"), 0o755)
	cfg := `{"cniVersion":"1.1.0","name":"la","plugins":[{"type":"logall"}]}`
	e.writeEntry(entryOpt{network: "la", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: cfg})
	e.writeEntry(entryOpt{network: "la", sandbox: "sb2", uid: uidA, netns: e.netns("g2", false), config: cfg})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	ctx := context.Background()
	c.ListPUs(ctx)
	c.SandboxDead(ctx, podOf(uidA), "sb1")
	c.DestroyPU(ctx, changedDefault(uidA, "sb1"))
	c.DestroyPU(ctx, goneDefault(uidA))
	b, _ := os.ReadFile(cmds)
	for _, l := range strings.Fields(string(b)) {
		if l != "DEL" {
			t.Fatalf("ran %q: %s", l, b)
		}
	}
	if strings.Count(string(b), "DEL") != 2 {
		t.Fatalf("want 2 DELs: %s", b)
	}
}
