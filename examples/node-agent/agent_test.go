package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/procbench"
	"github.com/podsweeper/podsweeper/internal/testkube"
	"github.com/podsweeper/podsweeper/ports"
)

// The agent's command line in a process of its own, as the tests drive it:
// its arguments, its log, its status page, its metrics and its probes.

// waitLong bounds every wait on the kubelet or the agent: these are real
// processes on a loaded 2-core machine, not fake time.
const waitLong = 90 * time.Second

// agentKubeconfig writes a kubeconfig that acts as the agent's
// ServiceAccount and returns its path.
func agentKubeconfig(t testing.TB, kubeconfig []byte) string {
	return testkube.ImpersonatingKubeconfig(t, kubeconfig, agentUser)
}

// agentArgsEnv, when set, makes TestAgentHelper run the agent with these
// arguments, one a line.
const agentArgsEnv = "PODSWEEPER_NODE_AGENT_ARGS"

// TestAgentHelper is the agent the tests run in a process of its own: with
// agentArgsEnv set, it runs the agent's command line until SIGTERM (or
// until killed).
func TestAgentHelper(t *testing.T) {
	args := os.Getenv(agentArgsEnv)
	if args == "" {
		t.Skip("run by the tests as the agent they start in a process of its own")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := run(ctx, strings.Split(args, "\n"), os.Getenv, os.Stderr); err != nil {
		// In the log the tests read (stderr), as a line of its own: the test framework's report goes to stdout.
		line, _ := json.Marshal(map[string]string{"ts": time.Now().Format(time.RFC3339Nano), "msg": "the agent's run failed", "error": err.Error()})
		fmt.Fprintf(os.Stderr, "%s\n", line)
		t.Fatal(err)
	}
}

// startAgent starts the agent in a child process with args; its logs go to logs.
func startAgent(ctx context.Context, t *testing.T, args []string, logs io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAgentHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), agentArgsEnv+"="+strings.Join(args, "\n"))
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	return cmd
}

// nodeAgent is the agent's command line running in a process of its own
// for one node.
type nodeAgent struct {
	cmd                    *exec.Cmd
	metricsAddr, probeAddr string
	log                    *agentLog
	exited                 bool
	// done is closed once the process has exited, with waitErr what it exited with.
	done    chan struct{}
	waitErr error
}

// wait waits for the agent's process, and records how it exited.
func (a *nodeAgent) wait() {
	a.waitErr = a.cmd.Wait()
	close(a.done)
}

// ended reports whether the agent's process has exited, and how.
func (a *nodeAgent) ended() (bool, error) {
	select {
	case <-a.done:
		return true, a.waitErr
	default:
		return false, nil
	}
}

// runAgent runs the agent's command line in a process of its own, with a
// kubeconfig that acts as its ServiceAccount, free metrics (plain HTTP, on
// loopback) and probe addresses, no pprof or status listener of its own (their
// defaults are fixed ports of the host's loopback, which another run of the
// tests may hold; args may name them), and args. It is stopped (SIGTERM) when
// the test ends; its log is printed if the test failed.
func runAgent(t *testing.T, kubeconfig []byte, args ...string) *nodeAgent {
	t.Helper()
	a := &nodeAgent{metricsAddr: testkube.FreeAddr(t), probeAddr: testkube.FreeAddr(t), log: &agentLog{}, done: make(chan struct{})}
	args = append([]string{"--kubeconfig=" + agentKubeconfig(t, kubeconfig),
		"--metrics-bind-address=" + a.metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=" + a.probeAddr,
		"--pprof-bind-address=0", "--status-bind-address=0",
		"--zap-time-encoding=rfc3339nano"}, args...) // JSON lines, as deployed, with timestamps precise enough to order events
	a.cmd = startAgent(context.Background(), t, args, a.log)
	go a.wait()
	t.Cleanup(func() {
		a.stop(t)
		a.log.ended()
		a.log.unparsed(t)
		if t.Failed() {
			t.Logf("the agent's log:\n%s", a.log)
		}
	})
	return a
}

// logLine is a line of the agent's JSON log.
type logLine struct {
	At        time.Time
	Msg       string
	PUID      string
	Pod       string
	SandboxID string
	Reason    ports.Reason
	UID       string // of the requeued pod
}

// parseLogLine parses a line of the agent's log: a JSON object with a
// message and an RFC 3339 timestamp (--zap-time-encoding=rfc3339nano).
func parseLogLine(b []byte) (logLine, error) {
	var e struct {
		TS        string `json:"ts"`
		Msg       string `json:"msg"`
		PUID      string `json:"puID"`
		Pod       string `json:"pod"`
		SandboxID string `json:"sandboxID"`
		Reason    string `json:"reason"`
		UID       string `json:"uid"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return logLine{}, err
	}
	if e.Msg == "" {
		return logLine{}, errors.New("no msg")
	}
	at, err := time.Parse(time.RFC3339Nano, e.TS)
	if err != nil {
		return logLine{}, fmt.Errorf("ts: %w", err)
	}
	return logLine{At: at, Msg: e.Msg, PUID: e.PUID, Pod: e.Pod, SandboxID: e.SandboxID, Reason: ports.Reason(e.Reason), UID: e.UID}, nil
}

// agentLog collects the agent's log as it comes and parses each line. The
// agent logs JSON lines only: a line that does not parse (a klog line, a
// race report, a panic) could be the very line a test looks for, so it
// is kept, and fails the test at its next look at the log from the test's
// goroutine (nodeAgent.logged) or once the agent has stopped.
type agentLog struct {
	mu       sync.Mutex
	raw      bytes.Buffer
	partial  []byte
	lines    []logLine
	bad      []string // the lines that did not parse, and why
	reported int      // how many of bad have failed the test
}

func (l *agentLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.raw.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.parseLocked(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *agentLog) parseLocked(line []byte) {
	e, err := parseLogLine(line)
	if err != nil {
		l.bad = append(l.bad, fmt.Sprintf("%q (%v)", line, err))
		return
	}
	l.lines = append(l.lines, e)
}

// ended parses the last line, left without its newline when the agent
// exited.
func (l *agentLog) ended() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.parseLocked(l.partial)
		l.partial = nil
	}
}

// unparsed fails the test with the lines that did not parse and have not
// failed it yet, and reports whether there were any.
func (l *agentLog) unparsed(t *testing.T) bool {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	bad := l.bad[l.reported:]
	l.reported = len(l.bad)
	if len(bad) == 0 {
		return false
	}
	t.Errorf("the agent logged %d line(s) that are not JSON lines of its logger:\n%s", len(bad), strings.Join(bad, "\n"))
	return true
}

func (l *agentLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.raw.String()
}

// find returns the lines with that message, for the PU (or requeued pod)
// of uid; every one when uid is "".
func (l *agentLog) find(msg string, uid types.UID) []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, e := range l.lines {
		if e.Msg == msg && (uid == "" || e.PUID == string(uid) || e.UID == string(uid)) {
			out = append(out, e)
		}
	}
	return out
}

// destroys returns what the agent asked the policy engine to destroy for
// the PU of uid (every PU when uid is "").
func (l *agentLog) destroys(uid types.UID) []logLine { return l.find("destroying PU", uid) }

// logged is find for an assertion, on the test's goroutine: it first fails
// the test if a line of the log did not parse.
func (a *nodeAgent) logged(t *testing.T, msg string, uid types.UID) []logLine {
	t.Helper()
	if a.log.unparsed(t) {
		t.FailNow()
	}
	return a.log.find(msg, uid)
}

// destroys is destroys for an assertion, on the test's goroutine: it first
// fails the test if a line of the log did not parse.
func (a *nodeAgent) destroys(t *testing.T, uid types.UID) []logLine {
	t.Helper()
	return a.logged(t, "destroying PU", uid)
}

// stop stops the agent with SIGTERM and checks that it exits cleanly.
func (a *nodeAgent) stop(t *testing.T) {
	if a.exited {
		return
	}
	a.exited = true
	if ended, err := a.ended(); ended {
		assert.NoError(t, err, "the agent exited before the test stopped it")
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
		assert.NoError(t, a.waitErr, "the agent stops cleanly on SIGTERM")
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
		t.Error("the agent did not stop within 30s of SIGTERM")
	}
}

// kill kills the agent with SIGKILL.
func (a *nodeAgent) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	<-a.done
	err := a.waitErr
	a.exited = true
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "killed by SIGKILL, not %v", err)
}

// status returns the agent's status page by PUID: the PUs it tracks, with
// their sandbox and last check; nil when it cannot be read.
func (a *nodeAgent) status(t *testing.T) map[string]k8s.PUStatus {
	body := testkube.Get(t, "http://"+a.metricsAddr+k8s.StatusPath)
	if body == "" {
		return nil
	}
	var list []k8s.PUStatus
	if json.Unmarshal([]byte(body), &list) != nil {
		return nil
	}
	out := make(map[string]k8s.PUStatus, len(list))
	for _, s := range list {
		out[s.PUID] = s
	}
	return out
}

// trackedWith reports whether the agent tracks the pod's PU with that sandbox.
func (a *nodeAgent) trackedWith(t *testing.T, uid types.UID, sandbox string) bool {
	s, ok := a.status(t)[string(uid)]
	return ok && s.SandboxID == sandbox
}

// metric returns the value of the metric line that starts with name (a
// name and its labels), or -1.
func (a *nodeAgent) metric(t *testing.T, name string) float64 {
	return procbench.Metric(testkube.Get(t, "http://"+a.metricsAddr+"/metrics"), name)
}

// checkedAfter waits for two checks of the PU of uid that ended after since
// (the second began after it: checks of one PU never overlap), and returns
// the PU's status then. The page tells a check's time as its own wall-clock
// time less how long ago the check ended, so two reads of one check may
// differ by a few microseconds: a later check is one that ended
// sameCheck after the first (checks of one PU are a sweep apart, 200 ms
// at the least here).
func (a *nodeAgent) checkedAfter(t *testing.T, uid types.UID, since time.Time) k8s.PUStatus {
	t.Helper()
	const sameCheck = 50 * time.Millisecond
	var first time.Time
	var st k8s.PUStatus
	require.Eventually(t, func() bool {
		s, ok := a.status(t)[string(uid)]
		if !ok || s.LastChecked == nil || !s.LastChecked.After(since) {
			return false
		}
		if first.IsZero() {
			first = *s.LastChecked
			return false
		}
		st = s
		return s.LastChecked.After(first.Add(sameCheck))
	}, waitLong, 20*time.Millisecond, "the agent checks the PU of %s again", uid)
	return st
}

// destroyed waits for the agent to ask for want destroys of the PU of uid
// and returns them.
func destroyed(t *testing.T, a *nodeAgent, uid types.UID, want int) []logLine {
	t.Helper()
	require.Eventually(t, func() bool { return len(a.log.destroys(uid)) >= want }, waitLong, 10*time.Millisecond,
		"the agent destroys the PU of %s", uid)
	return a.destroys(t, uid)
}

// probe returns the status code and body of url; 0 when it cannot be read yet.
func probe(t *testing.T, url string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, ""
	}
	return resp.StatusCode, string(b)
}

// What the agent logs is a JSON line of its logger, or nothing a test can
// read: a klog line, a JSON line without a message or a timestamp does not
// parse.
func TestParseLogLine(t *testing.T) {
	e, err := parseLogLine([]byte(`{"level":"info","ts":"2025-01-02T03:04:05.123456789Z","logger":"policy","msg":"destroying PU",` +
		`"puID":"uid-1","pod":"ns/web","sandboxID":"sb","reason":"PodGone"}`))
	require.NoError(t, err)
	assert.Equal(t, logLine{At: time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC), Msg: "destroying PU",
		PUID: "uid-1", Pod: "ns/web", SandboxID: "sb", Reason: ports.ReasonPodGone}, e)
	for name, line := range map[string]string{
		"klog":         `W0102 03:04:05.123456   42 reflector.go:561] watch of *v1.Pod ended with: too old resource version`,
		"race report":  `WARNING: DATA RACE`,
		"no message":   `{"level":"info","ts":"2025-01-02T03:04:05Z"}`,
		"epoch ts":     `{"level":"info","ts":1735787045.123,"msg":"destroying PU"}`,
		"no timestamp": `{"level":"info","msg":"destroying PU"}`,
	} {
		_, err := parseLogLine([]byte(line))
		assert.Error(t, err, name)
	}
}
