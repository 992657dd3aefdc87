package promises_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Holds: New's validation, DestroyPU without a PUID, SandboxDead without
// a pod, and an entry without K8S_POD_NAME skipped with one log line.
func TestAuditHoldsInputsValidated(t *testing.T) {
	e := newEnv(t)
	f := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(f, nil, 0o644)
	for _, o := range []cni.Options{
		{CacheDir: f, PluginDirs: []string{e.plugins}},
		{CacheDir: e.cache, PluginDirs: []string{e.plugins, "/nonexistent"}},
		{CacheDir: e.cache, PluginDirs: []string{e.plugins}, NewestSandboxTimeout: -1},
		{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ResyncInterval: -1},
	} {
		if _, err := cni.New(o); !errors.Is(err, cni.ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v", o, err)
		}
	}
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(p, a string) { mu.Lock(); lines = append(lines, a); mu.Unlock() }, funcr.Options{})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DestroyPU(context.Background(), ports.DestroyEvent{}); !ports.IsPermanent(err) {
		t.Errorf("DestroyPU without PUID = %v", err)
	}
	if _, err := c.SandboxDead(context.Background(), nil, "x"); err == nil {
		t.Error("SandboxDead(nil) = nil")
	}
	if _, err := c.SandboxDead(context.Background(), &corev1.Pod{}, "x"); err == nil {
		t.Error("SandboxDead(no UID) = nil")
	}
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
		m["cniArgs"] = [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_UID", "uid1"}}
	})
	for range 2 {
		pus, err := c.ListPUs(context.Background())
		if err != nil || len(pus) != 0 {
			t.Fatalf("ListPUs %v %v", pus, err)
		}
	}
	if err := c.DestroyPU(context.Background(), gone("uid1")); err != nil || len(e.dels()) != 0 {
		t.Fatalf("DestroyPU of an entry without K8S_POD_NAME: %v %v", err, e.dels())
	}
	mu.Lock()
	n := strings.Count(strings.Join(lines, "\n"), "net1-sbA-eth0")
	mu.Unlock()
	if n != 1 {
		t.Fatalf("logged %d times: %v", n, lines)
	}
}

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
