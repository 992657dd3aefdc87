package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/go-logr/logr"
)

// pluginWaitDelay is how long a plugin's output is waited for once the
// plugin has exited (or its context is done): a child it left behind
// holding its standard output or error would otherwise hold the DEL for as
// long as the child lives.
const pluginWaitDelay = 2 * time.Second

// LogMessagePluginStderr is the message of the line the Collector logs (at
// info) with what a plugin that succeeded wrote to its standard error: a
// plugin's words never reach the process's standard error raw, among a
// program's JSON lines. What a plugin that failed wrote is in its error.
const LogMessagePluginStderr = "a CNI plugin wrote to its standard error"

// pluginExec runs the plugins as libcni's default does (invoke.RawExec:
// the config on standard input, the result or the error on standard
// output, a "text file busy" plugin tried again), with two differences:
// what a plugin that succeeded wrote to its standard error is logged, and
// a plugin's output is waited for at most pluginWaitDelay past its exit. It
// is given to libcni up front: a CNIConfig without one makes it on first
// use, a write that concurrent DELs of the engine's workers race on.
type pluginExec struct {
	version.PluginDecoder
	log logr.Logger
}

var _ invoke.Exec = (*pluginExec)(nil)

// newPluginExec returns the plugins' runner, which logs to log.
func newPluginExec(log logr.Logger) *pluginExec { return &pluginExec{log: log} }

// ExecPlugin runs the plugin at pluginPath with stdinData on its standard
// input and environ, and returns its standard output.
func (e *pluginExec) ExecPlugin(ctx context.Context, pluginPath string, stdinData []byte, environ []string) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		var stdout, stderr bytes.Buffer
		c := exec.CommandContext(ctx, pluginPath)
		c.Env, c.Stdin, c.Stdout, c.Stderr = environ, bytes.NewReader(stdinData), &stdout, &stderr
		c.WaitDelay = pluginWaitDelay
		err := c.Run()
		if errors.Is(err, exec.ErrWaitDelay) { // it exited with status 0; a child of its held its output
			e.log.Info("a CNI plugin's output was held past its exit by a process it left behind; not waited for",
				"plugin", filepath.Base(pluginPath), "waited", pluginWaitDelay.String())
			err = nil
		}
		switch {
		case err != nil && strings.Contains(err.Error(), "text file busy") && attempt < 5:
			time.Sleep(time.Second) // being written: as libcni, try it again
			continue
		case err != nil:
			return nil, pluginErr(err, stdout.Bytes(), stderr.Bytes())
		}
		if stderr.Len() > 0 {
			e.log.Info(LogMessagePluginStderr, "plugin", filepath.Base(pluginPath), "stderr", strings.TrimSpace(stderr.String()))
		}
		return stdout.Bytes(), nil
	}
}

// pluginErr is the error of a plugin that failed, as libcni makes it: its
// standard output's error, or what it wrote to its standard error.
func pluginErr(err error, stdout, stderr []byte) error {
	emsg := types.Error{}
	switch {
	case len(stdout) == 0 && len(stderr) == 0:
		emsg.Msg = fmt.Sprintf("netplugin failed with no error message: %v", err)
	case len(stdout) == 0:
		emsg.Msg = fmt.Sprintf("netplugin failed: %q: %v", string(stderr), err)
	default:
		if perr := json.Unmarshal(stdout, &emsg); perr != nil {
			emsg.Msg = fmt.Sprintf("netplugin failed but error parsing its diagnostic message %q: %v", string(stdout), perr)
		}
		if s := strings.TrimSpace(string(stderr)); s != "" { // what it wrote besides is in its error too
			emsg.Details = strings.TrimSpace(emsg.Details + " (its standard error: " + s + ")")
		}
	}
	return &emsg
}

// FindInPath returns the path of plugin in paths, as libcni does.
func (e *pluginExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}
