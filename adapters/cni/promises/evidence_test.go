package promises_test

// Nothing is freed without evidence: without a Runtime, a gone pod's sandbox
// whose network namespace is there is kept (ErrNoEvidence) and one whose
// namespace is gone is freed; a Runtime that fails or hangs keeps everything
// (a plain error, DestroyPU ending with its context) while ListPUs still lists
// the cache; and the namespace of a live process is not gone for a collector
// in another PID namespace.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// No Runtime: a gone pod's sandbox with its namespace there is kept
// (ErrNoEvidence); one whose namespace is gone is freed.
func TestAuditHoldsNoRuntimeNoEvidence(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
	e.write("net1", "sbB", "uid1", e.netns("b", true), time.Time{})
	c := e.collector(nil, 0)
	err := c.DestroyPU(context.Background(), gone("uid1"))
	if !errors.Is(err, cni.ErrNoEvidence) || e.delsOf("sbB") != 0 || e.delsOf("sbA") != 1 {
		t.Fatalf("%v %v", err, e.dels())
	}
}

// Holds: without a Runtime, a gone pod's sandbox whose namespace is there is kept (ErrNoEvidence)
// and the one whose namespace is gone is freed.
func TestAuditHoldsNoRuntime(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sblive", uid: uidA, netns: e.netns("there", true)})
	e.writeEntry(entryOpt{sandbox: "sbdead", uid: uidA, netns: e.netns("gone", false)})
	c := e.collector(nil, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if !errors.Is(err, cni.ErrNoEvidence) || e.delled("sblive") || !e.delled("sbdead") {
		t.Fatalf("err %v dels %v", err, e.delLogFields())
	}
}

// A runtime that fails keeps everything (plain error).
func TestAuditHoldsRuntimeFailsKeepsAll(t *testing.T) {
	e := newEnv(t)
	e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
	rt := &fakeRuntime{err: errors.New("boom")}
	c := e.collector(rt, 0)
	err := c.DestroyPU(context.Background(), gone("uid1"))
	if err == nil || ports.IsPermanent(err) || len(e.dels()) != 0 {
		t.Fatalf("%v %v", err, e.dels())
	}
}

// Holds: a runtime that fails keeps everything.
func TestAuditHoldsRuntimeFailsKeeps(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
	c := e.collector(&fakeRuntime{ignoreFilter: true, err: errors.New("unavailable")}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if err == nil || e.delled("sb1") {
		t.Fatalf("err %v dels %v", err, e.delLogFields())
	}
}

type hangingRuntime struct{}

func (hangingRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// Hold: a Runtime that hangs keeps everything: DestroyPU fails (plain
// error) when its context ends; ListPUs orders by the cache and lists.
func TestAuditHoldsHangingRuntimeKeepsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.write("net1", "sbA", "uid1", e.netns("a", false), time.Time{})
		c := e.collector(hangingRuntime{}, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := c.DestroyPU(ctx, gone("uid1"))
		if err == nil || ports.IsPermanent(err) || len(e.dels()) != 0 {
			t.Fatalf("%v %v", err, e.dels())
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		pus, err := c.ListPUs(ctx2)
		if err != nil || len(pus) != 1 {
			t.Fatalf("ListPUs %v %v", pus, err)
		}
	})
}

// Holds: a runtime that hangs keeps everything (DestroyPU ends with its context, nothing freed),
// and ListPUs still lists the cache.
func TestAuditHoldsRuntimeHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
		c := e.collector(hangingRuntime{}, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.DestroyPU(ctx, goneDefault(uidA)); err == nil || e.delled("sb1") {
			t.Fatalf("err %v dels %v", err, e.delLogFields())
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		if pus, err := c.ListPUs(ctx2); err != nil || len(pus) != 1 {
			t.Fatalf("ListPUs %v %v", pus, err)
		}
	})
}

const innerEnv = "PODSWEEPER_PROCNS_INNER"

// docs/sdk/cni-freeing.md:43-44: "A namespace is gone only when its path
// is, from a directory that is there (or a /proc/<pid> path whose process
// is gone): a directory the collector's container does not see tells
// nothing." and doc.go: "Without a Runtime, nothing but a gone network
// namespace tells that a sandbox is dead: every other sandbox of a gone
// pod is kept (ErrNoEvidence)".
//
// The shipped DaemonSet (examples/cni-gc/deploy/daemonset.yaml, and the
// chart) has hostNetwork but no hostPID: the collector's /proc is its own
// PID namespace's. A cache entry recorded with /proc/<pid>/ns/net of a
// live process (the pod's pause process, as runtimes that do not pin
// namespaces cache it) is read there as a process that is gone. This test
// runs the collector (no Runtime, a gone pod per the API: a static pod
// whose mirror pod is missing) in a private PID namespace with its own
// /proc, as that container does, while the "pause" process lives.
func TestAuditProcNetnsOfLiveProcessFromPrivatePIDNamespace(t *testing.T) {
	if e, inner := fromParent(t, innerEnv); inner {
		err := e.collector(nil, 0).DestroyPU(context.Background(), gone("uid1"))
		fmt.Printf("INNER no Runtime: DestroyPU(PodGone uid1) = %v (ErrNoEvidence: %v)\n", err, errors.Is(err, cni.ErrNoEvidence))
		// With a Runtime (as examples/cni-gc wires one) that does not list
		// sbB yet: the runtime is creating it.
		err = e.collector(&fakeRuntime{}, 0).DestroyPU(context.Background(), changed("uid2", "sbB"))
		fmt.Printf("INNER Runtime: DestroyPU(SandboxChanged uid2 sbB) = %v (ErrNewestSandbox: %v)\n", err, errors.Is(err, cni.ErrNewestSandbox))
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root for a private PID namespace")
	}
	pause := exec.Command("sleep", "600")
	if err := pause.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pause.Process.Kill(); _ = pause.Wait() })
	pid := pause.Process.Pid

	e := newEnv(t)
	e.write("net1", "sbA", "uid1", "/proc/"+strconv.Itoa(pid)+"/ns/net", timeZero)
	e.write("net1", "sbB", "uid2", "/proc/"+strconv.Itoa(pid)+"/ns/net", timeZero)

	// In the host's PID namespace the same collector keeps it: it holds.
	if err := e.collector(nil, 0).DestroyPU(context.Background(), gone("uid1")); !errors.Is(err, cni.ErrNoEvidence) || len(e.dels()) != 0 {
		t.Fatalf("host PID namespace: DestroyPU = %v, DELs %v", err, e.dels())
	}
	if err := e.collector(&fakeRuntime{}, 0).DestroyPU(context.Background(), changed("uid2", "sbB")); !errors.Is(err, cni.ErrNewestSandbox) || len(e.dels()) != 0 {
		t.Fatalf("host PID namespace, Runtime: DestroyPU = %v, DELs %v", err, e.dels())
	}

	dirs, _ := json.Marshal(e)
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", os.Args[0],
		"-test.run=^TestAuditProcNetnsOfLiveProcessFromPrivatePIDNamespace$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), innerEnv+"="+string(dirs))
	out, err := cmd.CombinedOutput()
	t.Logf("inner (pid %d alive: %v): %s", pid, pause.ProcessState == nil, out)
	if err != nil {
		t.Fatalf("inner run: %v", err)
	}
	if n := e.delsOf("sbA"); n != 0 {
		t.Errorf("no Runtime: the collector in its own PID namespace freed gone pod uid1's sandbox sbA, whose network namespace /proc/%d/ns/net is a live process's (%d DEL); want it kept with ErrNoEvidence", pid, n)
	}
	if n := e.delsOf("sbB"); n != 0 {
		t.Errorf("with a Runtime not listing it yet: the collector in its own PID namespace freed live pod uid2's sandbox sbB on a sandbox change, whose network namespace /proc/%d/ns/net is a live process's (%d DEL): one the runtime may be creating; want ErrNewestSandbox", pid, n)
	}
}
