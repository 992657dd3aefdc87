package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testcni"
)

// Collector.Resync (go doc): "It returns when ctx ends (nil)". libcni loads a conflist's network's
// plugin files from <ConfDir>/<network>/*.conf; a named pipe there (garbage in the runtime's config
// directory) must not keep Resync from returning once its context ends.
func TestResyncReturnsWithANamedPipeInANetworksConfigDirectory(t *testing.T) {
	root := t.TempDir()
	cache, bin, conf := filepath.Join(root, "cache"), filepath.Join(root, "bin"), filepath.Join(root, "conf")
	for _, d := range []string{filepath.Join(cache, "results"), bin, filepath.Join(conf, "podnet")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testcni.Write(t, filepath.Join(conf, "10-podnet.conflist"), bridgeHostLocal)
	fifo := filepath.Join(conf, "podnet", "x.conf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cni.New(cni.Options{CacheDir: cache, PluginDirs: []string{bin}, ConfDir: conf, ResyncInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Resync(ctx, testcni.NopTracker{}) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Resync: %v", err)
		}
	case <-time.After(3 * time.Second):
		// Let the blocked read end with the test.
		go func() {
			for i := 0; i < 100; i++ {
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		t.Fatal("Resync did not return 3s after its context ended: it blocks reading a named pipe of ConfDir")
	}
}
