package cacheentries_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// cni.AddressHandler: "What it could not read (a config of ConfDir being written, libcni's cache) it says in
// AddressStatus.Unread, and answers the rest." A cache entry that is a link (never used, but read through:
// cni-freeing.md:38-41) to a named pipe: the collector reads through the link, and its read never ends. (ConfDir's
// reads stat a file before reading it and pass over a pipe; the reservations' reads too.)
func TestCacheLinkToPipeHangsTheCollector(t *testing.T) {
	e := newEnv(t)
	pipe := filepath.Join(e.root, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(pipe, filepath.Join(e.cache, "results", "podnet-s9-eth0")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // release any reader blocked on the pipe
		for i := 0; i < 8; i++ {
			if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	c, err := cni.New(e.opts(&fakeRuntime{}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.ListPUs(context.Background())
		rec := httptest.NewRecorder()
		c.AddressHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, cni.AddressPath+"?ip=10.88.0.5", nil))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("ListPUs and the address page did not answer in 10s: the read of a cache entry that is a link to a named pipe blocks")
	}
}
