package confchange_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
)

// fakeRuntime answers ListPodSandbox with whatever fn returns.
type fakeRuntime struct {
	mu sync.Mutex
	fn func() ([]*runtimeapi.PodSandbox, error)
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	fn := f.fn
	f.mu.Unlock()
	return fn()
}

func (f *fakeRuntime) set(fn func() ([]*runtimeapi.PodSandbox, error)) {
	f.mu.Lock()
	f.fn = fn
	f.mu.Unlock()
}

type env struct {
	t                                    *testing.T
	root, cache, plugins, conf, data, ns string
	delLog                               string
	rt                                   *fakeRuntime
}

const logPlugin = `#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  cat >/dev/null
  echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'
  exit 0
fi
cat >/dev/null
echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME $CNI_NETNS" >> "$(dirname "$0")/../del.log"
exit 0
`

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, root: root, cache: filepath.Join(root, "cache"), plugins: filepath.Join(root, "bin"),
		conf: filepath.Join(root, "conf"), data: filepath.Join(root, "data"), ns: filepath.Join(root, "netns"),
		delLog: filepath.Join(root, "del.log"), rt: &fakeRuntime{fn: func() ([]*runtimeapi.PodSandbox, error) { return nil, nil }}}
	for _, d := range []string{filepath.Join(e.cache, "results"), e.plugins, e.conf, e.data, e.ns} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.plugins, "logdel"), []byte(logPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) collector(mod func(*cni.Options)) *cni.Collector {
	e.t.Helper()
	o := cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, HostLocalDataDir: e.data,
		Runtime: e.rt, NewestSandboxTimeout: time.Hour, ReservationGrace: time.Minute, Logger: logr.Discard()}
	if mod != nil {
		mod(&o)
	}
	c, err := cni.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}
