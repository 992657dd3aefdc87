package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

const (
	// thisNode is the node our imaginary agent runs on.
	thisNode = "node-a"
	// sandboxAnnotation is where this story keeps each pod's sandbox ID; a
	// real agent asks the container runtime (CRI) instead.
	sandboxAnnotation = "example.com/sandbox-id"
	namespace         = "shop"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := runStory(ctx, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	if failed := res.Check(); len(failed) > 0 {
		fmt.Fprintln(os.Stderr, "quickstart: the engine did not do what the story expects:")
		for _, f := range failed {
			fmt.Fprintln(os.Stderr, "  -", f)
		}
		os.Exit(1)
	}
}

// Destroy is one PU the policy engine destroyed.
type Destroy struct {
	Pod    string // namespace/name
	PUID   string
	Reason ports.Reason
}

// Result is what happened during the story.
type Result struct {
	Destroys        []Destroy
	DestroysInStep  map[string]int   // step title -> destroys during it
	Requeued        []string         // pods handed back to the main controller
	GetFailures     int              // checks that could not read the pod
	StillTracked    []deletion.Entry // PUs alive at the end
	Elapsed         time.Duration
	outageStepTitle string
}

// Check returns every way in which res differs from what the story expects.
func (res Result) Check() []string {
	var failed []string
	want := []Destroy{
		{namespace + "/batch-0", "uid-batch-0-a", ports.ReasonNodeChanged},
		{namespace + "/cart-0", "uid-cart-0-a", ports.ReasonSandboxChanged},
		{namespace + "/db-0", "uid-db-0-a", ports.ReasonUIDChanged},
		{namespace + "/web-1", "uid-web-1-a", ports.ReasonPodGone},
		{namespace + "/worker-0", "uid-worker-0-a", ports.ReasonPodGone},
	}
	got := slices.Clone(res.Destroys)
	slices.SortFunc(got, func(a, b Destroy) int { return strings.Compare(a.Pod, b.Pod) })
	if !slices.Equal(got, want) {
		failed = append(failed, fmt.Sprintf("destroys: got %v, want %v", got, want))
	}
	if n := res.DestroysInStep[res.outageStepTitle]; n != 0 {
		failed = append(failed, fmt.Sprintf("%d PUs destroyed while the API server was down, want 0", n))
	}
	if res.GetFailures == 0 {
		failed = append(failed, "no pod read failed during the outage")
	}
	if want := []string{namespace + "/cart-0"}; !slices.Equal(res.Requeued, want) {
		failed = append(failed, fmt.Sprintf("requeued: got %v, want %v", res.Requeued, want))
	}
	if want := []deletion.Entry{
		{PUID: "uid-api-0-a", Pod: types.NamespacedName{Namespace: namespace, Name: "api-0"}, SandboxID: "sb-api-0"},
		{PUID: "uid-cart-0-a", Pod: types.NamespacedName{Namespace: namespace, Name: "cart-0"}, SandboxID: "sb-cart-2"},
		{PUID: "uid-db-0-b", Pod: types.NamespacedName{Namespace: namespace, Name: "db-0"}, SandboxID: "sb-db-0-b"},
	}; !slices.Equal(res.StillTracked, want) {
		failed = append(failed, fmt.Sprintf("still tracked: got %v, want %v", res.StillTracked, want))
	}
	return failed
}

// timeline prints what happens, with the time since the story began.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	lines []line // lines of the current step, printed at its end
}

type line struct {
	at   string
	text string
}

func (t *timeline) add(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line{at: t.elapsed(), text: fmt.Sprintf(format, args...)})
}

// flush prints the lines of the step, in the order they happened. Checks
// run in parallel, so lines of one step may come in another order next time.
func (t *timeline) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		fmt.Fprintf(t.w, "  %9s  %s\n", l.at, l.text)
	}
	if len(t.lines) == 0 {
		fmt.Fprintf(t.w, "  %9s  (nothing to destroy)\n", t.elapsed())
	}
	t.lines = t.lines[:0]
}

func (t *timeline) elapsed() string {
	return fmt.Sprintf("+%.1fms", float64(time.Since(t.start).Microseconds())/1000)
}

// flakyAPI is a PodGetter that fails while the API server is "down".
type flakyAPI struct {
	ports.PodGetter
	down atomic.Bool
}

var errAPIDown = errors.New("dial tcp 10.96.0.1:443: connect: connection refused")

func (f *flakyAPI) GetPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if f.down.Load() {
		return nil, errAPIDown
	}
	return f.PodGetter.GetPod(ctx, key)
}

func newPod(name, uid, node, sandbox string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, UID: types.UID(uid),
			Annotations: map[string]string{sandboxAnnotation: sandbox},
		},
		Spec: corev1.PodSpec{NodeName: node},
	}
}

// runStory plays the story, printing its timeline on w.
func runStory(ctx context.Context, w io.Writer) (Result, error) {
	tl := &timeline{w: w}
	res := Result{DestroysInStep: map[string]int{}}
	var step string

	// The in-memory API server, holding the pods of our node.
	pods := []*corev1.Pod{
		newPod("web-1", "uid-web-1-a", thisNode, "sb-web-1"),
		newPod("db-0", "uid-db-0-a", thisNode, "sb-db-0"),
		newPod("cart-0", "uid-cart-0-a", thisNode, "sb-cart-1"),
		newPod("batch-0", "uid-batch-0-a", thisNode, "sb-batch-0"),
		newPod("worker-0", "uid-worker-0-a", thisNode, "sb-worker-0"),
		newPod("api-0", "uid-api-0-a", thisNode, "sb-api-0"),
	}
	objs := make([]client.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	api := fake.NewClientBuilder().WithObjects(objs...).Build()
	getter := &flakyAPI{PodGetter: k8s.NewPodGetter(api)}

	// The four ports: the getter above, and three plain functions.
	var (
		mu  sync.Mutex
		err error
	)
	policy := ports.PolicyHandlerFunc(func(ctx context.Context, ev ports.DestroyEvent) error {
		tl.add("DESTROY  PU %-15s  pod %-16s  %s", ev.PUID, ev.Pod, ev.Reason)
		mu.Lock()
		defer mu.Unlock()
		res.Destroys = append(res.Destroys, Destroy{Pod: ev.Pod.String(), PUID: ev.PUID, Reason: ev.Reason})
		res.DestroysInStep[step]++
		return nil
	})
	sandbox := ports.SandboxExtractorFunc(func(ctx context.Context, pod *corev1.Pod) (string, error) {
		return pod.Annotations[sandboxAnnotation], nil
	})
	// engine is set below; the requeuer only runs once it is.
	var engine *deletion.Controller
	// createPU stands for the agent's pod controller: it creates the PU of
	// a pod in the policy engine and tells podsweeper about it.
	createPU := func(p *corev1.Pod) error {
		e := deletion.Entry{PUID: string(p.UID), Pod: client.ObjectKeyFromObject(p), SandboxID: p.Annotations[sandboxAnnotation]}
		tl.add("TRACK    PU %-15s  pod %-16s  sandbox %s", e.PUID, e.Pod, e.SandboxID)
		return engine.Track(e)
	}
	requeuer := ports.RequeuerFunc(func(ctx context.Context, pod *corev1.Pod) error {
		tl.add("REQUEUE  pod %s/%s: the pod controller creates the PU of its new sandbox", pod.Namespace, pod.Name)
		mu.Lock()
		res.Requeued = append(res.Requeued, pod.Namespace+"/"+pod.Name)
		mu.Unlock()
		return createPU(pod)
	})
	observer := deletion.ObserverFunc(func(ev deletion.Event) {
		if ev.Kind == deletion.EventGetFailed {
			tl.add("KEEP     PU %-15s  pod %-16s  cannot read the pod: %v", ev.Entry.PUID, ev.Entry.Pod, ev.Err)
			mu.Lock()
			res.GetFailures++
			mu.Unlock()
		}
	})

	engine, err = deletion.New(getter, policy, deletion.Options{
		NodeName:         thisNode,
		SandboxExtractor: sandbox,
		Requeuer:         requeuer,
		Observer:         observer,
	})
	if err != nil {
		return res, err
	}

	// A real agent runs engine.Start(ctx), which checks every PU about every
	// SweepInterval and at once after TriggerPod. Here each Sweep stands for
	// one interval, so that the story runs the same way every time.
	play := func(title string, change func() error) error {
		step = title
		fmt.Fprintf(w, "\n%s\n", title)
		if change != nil {
			if err := change(); err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
		}
		engine.Sweep(ctx)
		tl.flush()
		return ctx.Err()
	}

	tl.start = time.Now()
	fmt.Fprintf(w, "podsweeper quickstart: an agent on %s has created a PU for each of its %d pods.\n", thisNode, len(pods))
	for _, p := range pods {
		if err := createPU(p); err != nil {
			return res, err
		}
	}
	tl.flush()

	steps := []struct {
		title  string
		change func() error
	}{
		{"1. Every pod is alive: every PU is kept.", nil},
		{"2. web-1 is deleted.", func() error {
			return api.Delete(ctx, pods[0])
		}},
		{"3. db-0 is recreated under the same name (a StatefulSet does this) and the delete event was missed.", func() error {
			if err := api.Delete(ctx, pods[1]); err != nil {
				return err
			}
			p := newPod("db-0", "uid-db-0-b", thisNode, "sb-db-0-b")
			if err := api.Create(ctx, p); err != nil {
				return err
			}
			return createPU(p) // the new pod gets a PU of its own
		}},
		{"4. cart-0's sandbox restarts: same pod, new network namespace.", func() error {
			p := pods[2].DeepCopy()
			p.Annotations[sandboxAnnotation] = "sb-cart-2"
			return api.Update(ctx, p)
		}},
		{"5. batch-0 is deleted and rescheduled under the same name on node-b.", func() error {
			if err := api.Delete(ctx, pods[3]); err != nil {
				return err
			}
			return api.Create(ctx, newPod("batch-0", "uid-batch-0-b", "node-b", "sb-batch-0-b"))
		}},
		{"6. The API server goes down; meanwhile worker-0 is deleted. Nothing is destroyed on an error.", func() error {
			getter.down.Store(true)
			return api.Delete(ctx, pods[4])
		}},
		{"7. The API server is back: worker-0's PU goes.", func() error {
			getter.down.Store(false)
			return nil
		}},
	}
	res.outageStepTitle = steps[5].title
	for _, s := range steps {
		if err := play(s.title, s.change); err != nil {
			return res, err
		}
	}

	res.StillTracked = engine.Pending()
	res.Elapsed = time.Since(tl.start)

	fmt.Fprintf(w, "\nSummary after %v:\n", res.Elapsed.Round(time.Millisecond))
	byReason := map[ports.Reason]int{}
	for _, d := range res.Destroys {
		byReason[d.Reason]++
	}
	var counts []string
	for _, r := range ports.Reasons() {
		if byReason[r] > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", r, byReason[r]))
		}
	}
	fmt.Fprintf(w, "  PUs destroyed:     %d (%s)\n", len(res.Destroys), strings.Join(counts, ", "))
	fmt.Fprintf(w, "  during the outage: %d destroyed, %d failed reads kept their PU\n", res.DestroysInStep[res.outageStepTitle], res.GetFailures)
	fmt.Fprintf(w, "  pods requeued:     %s\n", strings.Join(res.Requeued, ", "))
	alive := make([]string, len(res.StillTracked))
	for i, e := range res.StillTracked {
		alive[i] = fmt.Sprintf("%s (sandbox %s)", e.Pod, e.SandboxID)
	}
	fmt.Fprintf(w, "  still tracked:     %s\n", strings.Join(alive, ", "))
	return res, nil
}
