package promises_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Hold: "It never calls the plugins' GC verb": the plugin sees DEL only.
func TestAuditHoldsOnlyDelVerb(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
	e.write("net2", "sbB", "uid2", e.netns("b", false), time.Time{})
	c := e.collector(&fakeRuntime{}, 0)
	_, _ = c.ListPUs(context.Background())
	_ = c.DestroyPU(context.Background(), gone("uid1"))
	_ = c.DestroyPU(context.Background(), changed("uid2", "sbB"))
	b, _ := os.ReadFile(filepath.Join(e.plugins, "calls.log"))
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "DEL ") {
			t.Fatalf("plugin called with %q", l)
		}
	}
	if len(e.dels()) != 2 {
		t.Fatalf("DELs %v", e.dels())
	}
}
