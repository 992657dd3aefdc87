package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

// explainCases are the command lines of explain pod that
// testdata/explain-<case>.json answers.
var explainCases = map[string][]string{
	"live":            {"apps/web"},
	"deleted-dry-run": {"apps/web"},
	"recreated":       {"apps/web"},
	"retry":           {"apps/db"},
	"destroyed":       {"apps/cache"},
	"uid":             {"apps/web", "--uid", "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21", "--node", "node-a"},
	"unknown":         {"apps/nope"},
}

// TestTestdataIsWhatThePluginGathers: the answers of testdata/explain-*.json,
// whose outputs docs/operating/explain.md shows (TestRenderGolden,
// TestDocsShowTheGoldenOutputs), are what the plugin gathers, in its order,
// from an API server and programs that hold what they say: the pods, the
// programs' pods and their pages, the Events. A case written by hand
// otherwise than the plugin answers it (the programs in another order, a
// PU it would not show) fails here.
func TestTestdataIsWhatThePluginGathers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "explain-*.json"))
	require.NoError(t, err)
	for _, file := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "explain-"), ".json")
		if strings.HasPrefix(name, "ip-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			args, ok := explainCases[name]
			require.True(t, ok, "explainCases names the command line of %s", file)
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			var want PodExplanation
			require.NoError(t, json.Unmarshal(b, &want))

			f := newFakeAPI(t)
			if p := want.Pod; p != nil {
				pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: types.UID(p.UID)},
					Spec: corev1.PodSpec{NodeName: p.Node}, Status: corev1.PodStatus{Phase: corev1.PodPhase(p.Phase)}}
				if p.Deleting {
					pod.DeletionTimestamp = &metav1.Time{Time: want.Now}
				}
				f.addPod(pod)
			}
			for _, w := range want.Warnings {
				var ns, name, uid, asked string
				if n, _ := fmt.Sscanf(strings.ReplaceAll(w, "/", " "), "the pod named %s %s now has UID %s not %s", &ns, &name, &uid, &asked); n == 4 {
					f.addPod(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(strings.TrimSuffix(uid, ","))},
						Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
				}
			}
			for _, a := range want.Answers {
				require.Empty(t, a.Error, "a program that could not be asked is not made here")
				f.addProgramOf(a)
			}
			for _, e := range want.Events {
				f.addEvent(eventFrom(t, e))
			}

			r := f.run(append([]string{"explain", "pod", "-o", "json"}, args...)...)
			require.Equal(t, 0, r.code, r.stderr)
			var got PodExplanation
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			got.Now = want.Now // asked now; the times of the answers are the programs'
			got.EventsAt = nil // when its Events were read, now too
			for i := range got.Answers {
				got.Answers[i].At, got.Answers[i].ReportsAt = time.Time{}, time.Time{} // when each page answered
				if got.Answers[i].ReportsKept == got.Answers[i].ReportsTotal {
					got.Answers[i].ReportsKept = 0 // every report kept: the files leave it out then
				}
			}
			wantJSON, err := json.MarshalIndent(&want, "", "  ")
			require.NoError(t, err)
			gotJSON, err := json.MarshalIndent(&got, "", "  ")
			require.NoError(t, err)
			assert.Equal(t, string(wantJSON), string(gotJSON), "%s is not what the plugin gathers for kubectl podsweeper explain pod %s", file, strings.Join(args, " "))
		})
	}
}

// addProgramOf adds the pod of a's program, whose status page and dry
// run's report are a's.
func (f *fakeAPI) addProgramOf(a Answer) {
	p := a.Program
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == k8s.StatusPath:
			w.Header().Set(k8s.EngineHeader, k8s.EngineRunning)
			if a.Standby {
				w.Header().Set(k8s.EngineHeader, k8s.EngineNotRunning)
			}
			writeJSONResp(w, http.StatusOK, orEmpty(a.PUs))
		case r.URL.Path == k8s.DryRunPath && p.DryRun:
			writeJSONResp(w, http.StatusOK, map[string]any{"total": a.ReportsTotal, "reports": orEmpty(a.Reports)})
		default:
			http.NotFound(w, r)
		}
	}))
	f.t.Cleanup(s.Close)
	addr := strings.TrimPrefix(s.URL, "http://")
	args := []string{"--status-bind-address=" + addr}
	if p.DryRun {
		args = append(args, "--dry-run")
	}
	node := p.Node
	if node == "" {
		node = "node-z" // a cluster-wide program's pod: on any node
	}
	f.addPod(corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Pod, UID: types.UID("uid-" + p.Pod),
			Labels: map[string]string{"app.kubernetes.io/name": "podsweeper-" + p.Program, "app.kubernetes.io/instance": p.Release}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: p.Program, Args: args}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	})
	f.mu.Lock()
	f.forwardTo[p.Namespace+"/"+p.Pod] = addr
	f.mu.Unlock()
}

// destroyedPU is what a podsweeper Event's note says of the PU destroyed.
var destroyedPU = regexp.MustCompile(` PU (\S+) of pod (\S+)/(\S+)`)

// eventFrom is the Event the API server holds that the plugin says as e.
func eventFrom(t *testing.T, e Event) corev1.Event {
	m := destroyedPU.FindStringSubmatch(e.Note)
	require.NotNil(t, m, "the Event's note names the PU and its pod: %q", e.Note)
	uid, ns, name := m[1], m[2], m[3]
	ev := corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%d", name, e.Time.UnixNano())},
		Reason: e.Reason, Type: e.Type, Message: e.Note, ReportingController: "podsweeper",
		EventTime: metav1.NewMicroTime(e.Time)}
	if e.Count > 1 {
		ev.Series = &corev1.EventSeries{Count: int32(e.Count), LastObservedTime: metav1.NewMicroTime(e.Time)}
	}
	pod := corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name, UID: types.UID(uid)}
	switch kind, of, _ := strings.Cut(e.Regarding, "/"); kind {
	case "Pod":
		require.Equal(t, ns+"/"+name, of)
		ev.InvolvedObject = pod
	case "Node":
		ev.Namespace = metav1.NamespaceDefault
		ev.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: of, UID: types.UID(of)}
		ev.Related = &pod
	default:
		t.Fatalf("an Event regarding %q", e.Regarding)
	}
	return ev
}
