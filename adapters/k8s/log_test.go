package k8s_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// messages counts the JSON lines of buf by message.
func messages(t *testing.T, buf *bytes.Buffer) map[string]int {
	t.Helper()
	n := map[string]int{}
	for line := range strings.Lines(buf.String()) {
		var l struct {
			Msg string `json:"msg"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l), "%q", line)
		n[l.Msg]++
	}
	return n
}

// burst logs n lines of each message through log, as fast as it can: well
// within the sampler's second.
func burst(log logr.Logger, n int, msgs ...string) {
	for i := range n {
		for _, m := range msgs {
			log.Info(m, "i", i)
		}
	}
}

// TestNewLoggerNeverSamplesTheGivenMessages: of a burst of 1,000 lines of a
// message given to NewLogger, every one is written, through a named child
// with values too; another message is sampled as zap.New samples it (100,
// then one in 100). zap.New alone drops most of the first.
func TestNewLoggerNeverSamplesTheGivenMessages(t *testing.T) {
	const n = 1000
	var buf bytes.Buffer
	log := k8s.NewLogger(k8s.EngineRecordMessages(), crzap.WriteTo(&buf))
	burst(log.WithName("podsweeper").WithValues("k", "v"), n, k8s.LogMessageDestroyed, "PU kept")
	got := messages(t, &buf)
	assert.Equal(t, n, got[k8s.LogMessageDestroyed], "every line that records a destroy")
	// 100 then 1 in 100: 109 if the burst fits in one second, a few more
	// if it spans two.
	assert.GreaterOrEqual(t, got["PU kept"], 109)
	assert.Less(t, got["PU kept"], 300, "other messages are sampled as before")

	buf.Reset()
	burst(crzap.New(crzap.WriteTo(&buf)), n, k8s.LogMessageDestroyed)
	assert.Less(t, messages(t, &buf)[k8s.LogMessageDestroyed], 300, "zap.New samples the very same lines")
}

// TestNewLoggerFollowsTheFlags: the flags' options are zap.New's (a debug
// level writes V(1) lines, still unsampled for the given messages), and
// where zap.New does not sample (development mode), nothing is sampled.
func TestNewLoggerFollowsTheFlags(t *testing.T) {
	const n = 300
	for name, args := range map[string][]string{
		"production, debug level": {"--zap-log-level=debug"},
		"development":             {"--zap-devel", "--zap-encoder=json"},
	} {
		t.Run(name, func(t *testing.T) {
			var opts crzap.Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			opts.BindFlags(fs)
			require.NoError(t, fs.Parse(args))
			var buf bytes.Buffer
			log := k8s.NewLogger([]string{"kept"}, crzap.UseFlagOptions(&opts), crzap.WriteTo(&buf))
			burst(log.V(1), n, "kept")
			burst(log, n, "other")
			got := messages(t, &buf)
			assert.Equal(t, n, got["kept"], "V(1) lines of a given message, every one")
			if opts.Development {
				assert.Equal(t, n, got["other"], "development mode samples nothing")
			} else {
				assert.Less(t, got["other"], n, "production mode samples the others")
			}
		})
	}
}

// TestEngineRecordMessagesAreTheEngines runs an engine through a destroy, a
// veto, a PU given up on and a dry run, and checks that the lines recording
// them carry the messages EngineRecordMessages gives: were the engine's
// messages to change, NewLogger would sample them again.
func TestEngineRecordMessagesAreTheEngines(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	log := funcr.NewJSON(func(obj string) {
		var kv map[string]any
		if json.Unmarshal([]byte(obj), &kv) == nil {
			if m, ok := kv["msg"].(string); ok {
				mu.Lock()
				seen[m] = true
				mu.Unlock()
			}
		}
	}, funcr.Options{Verbosity: 1})

	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", UID: "live-uid"}}
	get := func(pods ...*corev1.Pod) ports.PodGetter {
		return ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
			for _, p := range pods {
				if p.Name == key.Name {
					return p.DeepCopy(), nil
				}
			}
			return nil, fmt.Errorf("%w: %s", ports.ErrPodNotFound, key)
		})
	}
	run := func(getter ports.PodGetter, policy ports.PolicyHandler, opts deletion.Options, sweeps int, pus ...ports.PU) {
		t.Helper()
		opts.Logger = log
		e, err := deletion.New(getter, policy, opts)
		require.NoError(t, err)
		for _, pu := range pus {
			require.NoError(t, e.Track(pu))
		}
		for range sweeps {
			e.Sweep(context.Background())
		}
	}
	sandbox := func(id string) ports.SandboxExtractor {
		return ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) { return id, nil })
	}
	ok := ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error { return nil })
	gone := ports.PU{PUID: "gone-uid", Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}}
	vetoed := ports.PU{PUID: "live-uid", Pod: types.NamespacedName{Namespace: "ns", Name: "live"}}

	run(get(), ok, deletion.Options{}, 1, gone)
	run(get(), ok, deletion.Options{Confirmer: get(live)}, 1, vetoed) // the cache says gone, the API server says live
	run(get(), ports.PolicyHandlerFunc(func(context.Context, ports.DestroyEvent) error {
		return ports.Permanent(errors.New("no such PU in the policy engine"))
	}), deletion.Options{}, 1, gone)
	run(get(), ok, deletion.Options{DryRun: true}, 1, gone)
	// The extractor sees a new sandbox, the runtime itself the old one: the
	// first check asks the SandboxConfirmer, the second the extractor.
	withSandbox := vetoed
	withSandbox.SandboxID = "old"
	run(get(live), ok, deletion.Options{SandboxExtractor: sandbox("new"), SandboxConfirmer: sandbox("old")}, 2, withSandbox)

	mu.Lock()
	defer mu.Unlock()
	for _, m := range k8s.EngineRecordMessages() {
		assert.True(t, seen[m], "the engine logs %q", m)
	}
}
