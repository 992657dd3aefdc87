package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type listRuntime struct {
	sbs []*runtimeapi.PodSandbox
	err error
}

func (l listRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return l.sbs, l.err
}

type env struct {
	root, cache, conf, data, netns, plugins string
}

func newEnv(t *testing.T) env {
	root := t.TempDir()
	plugins := os.Getenv("CNI_PLUGINS_DIR") // a directory that exists: these tests run no plugin
	if plugins == "" {
		plugins = t.TempDir()
	}
	e := env{root: root, cache: filepath.Join(root, "cache"), conf: filepath.Join(root, "conf"), data: filepath.Join(root, "networks"), netns: filepath.Join(root, "netns"), plugins: plugins}
	for _, d := range []string{filepath.Join(e.cache, "results"), e.conf, e.data, e.netns} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}
