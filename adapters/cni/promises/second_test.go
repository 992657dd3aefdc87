package promises_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/ports"
)

// Holds: a DEL that fails for one attachment keeps it, frees the others, and is a plain error.
func TestAuditHoldsDelFailurePlain(t *testing.T) {
	e := newEnv(t)
	failing := `#!/bin/sh
if [ "$CNI_COMMAND" = "DEL" ]; then echo '{"cniVersion":"1.0.0","code":11,"msg":"boom"}'; exit 1; fi
exit 0
`
	writeFile(t, e.plugins, "failplug", failing)
	os.Chmod(filepath.Join(e.plugins, "failplug"), 0o755)
	f := e.writeEntry(entryOpt{network: "bad", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: `{"cniVersion":"1.0.0","name":"bad","plugins":[{"type":"fakeplug"},{"type":"failplug"}]}`})
	e.writeEntry(entryOpt{network: "good", sandbox: "sb1", ifName: "eth1", uid: uidA, netns: e.netns("g", false)})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if err == nil || ports.IsPermanent(err) {
		t.Fatalf("want a plain error, got %v", err)
	}
	if _, serr := os.Stat(f); serr != nil {
		t.Fatalf("failed entry removed: %v", serr)
	}
	if !strings.Contains(strings.Join(e.delLogFields(), " "), "eth1") {
		t.Fatalf("the good attachment was not DELed: %v", e.delLogFields())
	}
}

// Holds: a DEL that hangs ends with the context, the entry kept, a plain error.
func TestAuditHoldsDelHang(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.plugins, "hangplug", "#!/bin/sh\nexec sleep 30\n")
	os.Chmod(filepath.Join(e.plugins, "hangplug"), 0o755)
	f := e.writeEntry(entryOpt{network: "h", sandbox: "sb1", uid: uidA, netns: e.netns("g", false), config: `{"cniVersion":"1.0.0","name":"h","plugins":[{"type":"hangplug"}]}`})
	c := e.collector(&fakeRuntime{ignoreFilter: true}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := c.DestroyPU(ctx, goneDefault(uidA))
	if err == nil || ports.IsPermanent(err) {
		t.Fatalf("want a plain error, got %v", err)
	}
	if _, serr := os.Stat(f); serr != nil {
		t.Fatalf("hung entry removed: %v", serr)
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

// Holds: a sandbox listed only with an unknown state is kept for a gone pod.
func TestAuditHoldsUnknownStateKept(t *testing.T) {
	e := newEnv(t)
	e.writeEntry(entryOpt{sandbox: "sb1", uid: uidA, netns: e.netns("g", false)})
	c := e.collector(&fakeRuntime{ignoreFilter: true, sbs: []*runtimeapi.PodSandbox{sandbox("sb1", uidA, 9, time.Now())}}, 0)
	err := c.DestroyPU(context.Background(), goneDefault(uidA))
	if e.delled("sb1") {
		t.Fatalf("freed: %v", err)
	}
	_ = cni.ErrSandboxRunning
}
