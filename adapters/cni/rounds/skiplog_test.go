package rounds_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// ListPUs: "Entries ... of a disableGC network are skipped, logged once"; LogMessageEntrySkipped: "once for each
// cache entry it skips". A config of that network rewritten (being written for a moment) has the entry logged again.
func TestAuditEntrySkippedLoggedOnceAcrossConfigRewrite(t *testing.T) {
	pd, _ := fakePlugins(t)
	e := newEnv(t)
	conf := filepath.Join(e.conf, "10-n1.conflist")
	whole := `{"cniVersion":"1.0.0","name":"n1","disableGC":true,"plugins":[{"type":"okplug"}]}`
	write(t, conf, whole, 0)
	cacheEntry(t, e.cache, entryOpts{network: "n1", id: "s1", ifName: "eth0", netns: "", uid: "u", ns: "d", name: "p", ip: "10.40.0.9"})
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{pd}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: &testcni.Runtime{}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list := func() {
		if _, err := c.ListPUs(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list()
	// The installer writes it anew: cut for a moment, past its name (cut after the comma that follows, the name
	// could not be told: a "name" given again may follow).
	write(t, conf, whole[:strings.Index(whole, `,"disableGC"`)], 0)
	list()
	write(t, conf, whole, 0)
	list()
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range lines {
		if strings.Contains(l, cni.LogMessageEntrySkipped) && strings.Contains(l, "n1-s1-eth0") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the disableGC network's entry n1-s1-eth0 was logged skipped %d times across three lists", n)
	}
}
