package main

// Whether a dry run reported the row a PU's check decided is the engine's own memory (its status page's
// reportedRows), not what the report page still keeps.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// dryRunEngine is a node agent's engine in a dry run on node-a, whose pod apps/web lives with the sandbox set last,
// and whose dry run of a destroy fails while failing is set.
type dryRunEngine struct {
	mu      sync.Mutex
	sandbox string
	failing bool
	eng     *deletion.Engine
	report  *k8s.DryRunReport
}

func (d *dryRunEngine) DestroyPU(context.Context, ports.DestroyEvent) error { return nil }

func (d *dryRunEngine) DryRunDestroyPU(context.Context, ports.DestroyEvent) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failing {
		return errors.New("the policy engine cannot be asked")
	}
	return nil
}

func (d *dryRunEngine) set(sandbox string, failing bool) {
	d.mu.Lock()
	d.sandbox, d.failing = sandbox, failing
	d.mu.Unlock()
}

// newDryRunAgent starts the engine (its report keeping keep reports; 0: its default) until the test ends.
func newDryRunAgent(t *testing.T, keep int) *dryRunEngine {
	d := &dryRunEngine{sandbox: "sb1", report: k8s.NewDryRunReport(keep)}
	live := workloadPod("apps", "web", firstUID, "node-a")
	getter := ports.PodGetterFunc(func(_ context.Context, key types.NamespacedName) (*corev1.Pod, error) {
		if key.Name != "web" {
			return nil, ports.ErrPodNotFound
		}
		return live.DeepCopy(), nil
	})
	eng, err := deletion.New(getter, d, deletion.Options{NodeName: "node-a", DryRun: true, Observer: d.report,
		SandboxExtractor: ports.SandboxExtractorFunc(func(context.Context, *corev1.Pod) (string, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.sandbox, nil
		}),
		SandboxProber: ports.SandboxProberFunc(func(context.Context, *corev1.Pod, string) (bool, error) { return true, nil }),
		SweepInterval: time.Hour, RetryMinDelay: time.Hour, RetryMaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for !eng.Running() {
		time.Sleep(time.Millisecond)
	}
	d.eng = eng
	return d
}

// check tracks pu if it is not, and checks every PU once.
func (d *dryRunEngine) check(t *testing.T, pu ports.PU) {
	if err := d.eng.Track(pu); err != nil { // insert-only: a PU tracked stays as it is
		t.Fatal(err)
	}
	d.eng.Sweep(context.Background())
}

// explain.md: "A dry run reports each row of a PU once: one whose check decided again a row it reported is told
// `would destroy it ... which it reported already`"; one not reported yet is told so, and reported once its dry run
// of the destroy succeeds. A real engine whose check decides row 10 (sandbox changed) again, its dry run of the
// destroy failing, after: (a) rows 10 and then 12 were reported; (b) row 10 was reported of the PU before it was
// untracked and tracked again, a new PU; (c) row 10 was reported, and the report page, keeping one, has dropped it
// for another pod's. explain pod, status and report agree with what the engine will do.
func TestReportedAlreadyIsTheEnginesMemoryOfTheRowsItReported(t *testing.T) {
	pu := ports.PU{PUID: firstUID, Pod: types.NamespacedName{Namespace: "apps", Name: "web"}, SandboxID: "sb1"}
	for _, tc := range []struct {
		name     string
		keep     int
		before   func(t *testing.T, d *dryRunEngine)
		reported bool
	}{
		{"another row reported since", 0, func(t *testing.T, d *dryRunEngine) {
			d.set("", false) // row 12, sandbox dead (the prober says so)
			d.check(t, pu)
			if st := d.eng.Status(); len(st) != 1 || st[0].LastVerdict.Row != 12 {
				t.Fatalf("scenario: want row 12: %+v", st)
			}
		}, true},
		{"the PU tracked again", 0, func(t *testing.T, d *dryRunEngine) {
			d.eng.Untrack(pu.PUID)
			if err := d.eng.Track(pu); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"its report dropped from the page", 1, func(t *testing.T, d *dryRunEngine) {
			d.check(t, ports.PU{PUID: secondUID, Pod: types.NamespacedName{Namespace: "apps", Name: "gone"}})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDryRunAgent(t, tc.keep)
			d.check(t, pu) // row 9: same sandbox
			d.set("sb2", false)
			d.check(t, pu) // row 10: reported
			tc.before(t, d)
			d.set("sb2", true)
			d.check(t, pu) // row 10 again, its dry run failing: waiting for a retry
			st := d.eng.Status()
			if len(st) == 0 || st[0].State != stateRetrying || st[0].LastVerdict.Row != 10 {
				t.Fatalf("scenario: want the PU waiting for a retry after row 10: %+v", st)
			}
			mux := http.NewServeMux()
			mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(d.eng))
			mux.Handle(k8s.DryRunPath, d.report)
			api := newFakeCluster(t, runningProgram("podsweeper-node-agent", "podsweeper", "agent-a", "node-a", "--dry-run"),
				workloadPod("apps", "web", firstUID, "node-a"))
			api.handle("podsweeper/agent-a", mux)
			c := api.cluster(5 * time.Second)
			now := time.Now().UTC()
			x, err := c.explainPod(testContext(t), "apps", "web", "", "node-a", now)
			if err != nil {
				t.Fatal(err)
			}
			explain, status, report := podText(t, x), statusText(t, c, "node-a", now), reportText(t, c, now)
			if tc.reported {
				wantSays(t, "explain pod", explain, "row 10, which it reported already")
				for what, text := range map[string]string{"explain pod": explain, "status": status, "report": report} {
					wantNotSays(t, what, text, "not reported yet")
				}
			} else {
				for what, text := range map[string]string{"explain pod": explain, "status": status, "report": report} {
					wantSays(t, what, text, "not reported yet")
				}
				wantNotSays(t, "explain pod", explain, "reported already")
			}
			// What the engine does: a row reported is never reported again; one not reported yet is, once its dry
			// run succeeds.
			_, before := d.report.Reports()
			d.set("sb2", false)
			d.check(t, pu)
			if _, after := d.report.Reports(); (after > before) == tc.reported {
				t.Errorf("the engine reported the row again: %v (reports %d, then %d); the plugin said it had reported it: %v", after > before, before, after, tc.reported)
			}
		})
	}
}
