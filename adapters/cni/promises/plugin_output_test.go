package promises_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

// chattyPlugin succeeds, says something on its standard error, and leaves behind a child that holds its
// standard output and error for a minute, as a shell plugin's "helper &" does.
const chattyPlugin = `#!/bin/sh
cat >/dev/null
echo "$CNI_COMMAND $CNI_CONTAINERID" >> "$(dirname "$0")/chatty.log"
echo "chatty: a warning of the plugin's own" >&2
sleep 60 &
exit 0
`

// adapters/cni's doc: DestroyPU "DELs each attachment ... with its cached config", and the programs' logs are
// JSON lines (program.NewLogger). A plugin is someone else's code: what it writes to its standard error
// reaches the Collector's log as one line (LogMessagePluginStderr), never the process's standard error raw;
// and a plugin that exits while a child of its holds its output ends its DEL all the same, within seconds,
// not when the child exits.
func TestAPluginsOutputNeitherLeaksNorHoldsItsDEL(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.plugins, "chatty"), []byte(chattyPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	e.writeEntry(entryOpt{network: "net1", sandbox: "sbA", uid: "uid1",
		config: `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"chatty"}]}`})
	var lines testkube.Lines
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Runtime: &fakeRuntime{}, Logger: lines.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid1", SandboxID: "sbA", Reason: ports.ReasonPodGone})
	if took := time.Since(start); err != nil || took > 10*time.Second {
		t.Fatalf("DestroyPU = %v after %v, want nil within seconds: a plugin's child holding its output holds no DEL", err, took)
	}
	if b, _ := os.ReadFile(filepath.Join(e.plugins, "chatty.log")); !strings.Contains(string(b), "DEL sbA") {
		t.Fatalf("the plugin was not DELed: %q", b)
	}
	if lines.Count(cni.LogMessagePluginStderr) != 1 || lines.Count("chatty: a warning of the plugin's own") != 1 {
		t.Errorf("the plugin's standard error is not one line of the Collector's log")
	}
}

// LogMessagePluginStderr: "What a plugin that failed wrote is in its error." A plugin whose DEL fails
// with libcni's JSON error on its standard output and words on its standard error: both are in the
// error DestroyPU answers.
func TestAFailedPluginsStderrIsInItsError(t *testing.T) {
	e := newEnv(t)
	failing := "#!/bin/sh\ncat >/dev/null\necho 'failing: the words of its own' >&2\n" +
		`echo '{"cniVersion":"1.0.0","code":11,"msg":"DEL refused"}'` + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(e.plugins, "failing"), []byte(failing), 0o755); err != nil {
		t.Fatal(err)
	}
	e.writeEntry(entryOpt{network: "net1", sandbox: "sbA", uid: "uid1",
		config: `{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"failing"}]}`})
	c, err := cni.New(cni.Options{CacheDir: e.cache, PluginDirs: []string{e.plugins}, ConfDir: e.conf, Runtime: &fakeRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.DestroyPU(context.Background(), ports.DestroyEvent{PUID: "uid1", SandboxID: "sbA", Reason: ports.ReasonPodGone})
	if err == nil || !strings.Contains(err.Error(), "DEL refused") || !strings.Contains(err.Error(), "failing: the words of its own") {
		t.Fatalf("DestroyPU = %v, want the plugin's error and its standard error", err)
	}
}
