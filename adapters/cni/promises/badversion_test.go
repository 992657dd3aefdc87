package promises_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// doc.go: "A cached config that would run no plugin (a conflist of none, a
// config of another network) is never "freed": the entry stays, and
// DestroyPU answers ports.Permanent." ErrUnusableEntry: "a cache entry of
// the PU cannot be read, or its config would run no plugin. DestroyPU
// wraps it with ports.Permanent".
//
// The cached conflist's cniVersion is not a version: libcni's
// DelNetworkList refuses it before running any plugin, so it would run no
// plugin. Observed: no plugin runs, and DestroyPU answers a plain error
// on every call (retried with backoff forever), not a permanent
// ErrUnusableEntry.
func TestAuditConfigWithInvalidVersionRunsNoPlugin(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{}, func(m map[string]any) {
		m["config"] = []byte(`{"cniVersion":"one-point-oh","name":"net1","plugins":[{"type":"fakeplugin"}]}`)
	})
	rt := &fakeRuntime{}
	rt.set(sb("sbA", "uid1", false, time.Now().Add(-time.Hour)))
	c := e.collector(rt, 0)
	var err error
	for range 3 {
		err = c.DestroyPU(context.Background(), gone("uid1"))
	}
	if len(e.dels()) != 0 {
		t.Fatalf("a plugin ran: %v", e.dels())
	}
	if !errors.Is(err, cni.ErrUnusableEntry) || !ports.IsPermanent(err) {
		t.Fatalf("DestroyPU = %v (permanent %v), want a permanent ErrUnusableEntry: its config runs no plugin", err, ports.IsPermanent(err))
	}
}
