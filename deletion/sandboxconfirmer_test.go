package deletion_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

// sandboxConfirmed is an engine whose SandboxExtractor (m.extractor, a
// list that may be a moment old) is confirmed by confirmer, the runtime
// asked right then.
func sandboxConfirmed(t *testing.T, m *mockPorts, rec *deletiontest.Events) (*deletion.Engine, *mocks.MockSandboxExtractor) {
	t.Helper()
	confirmer := mocks.NewMockSandboxExtractor(gomock.NewController(t))
	return m.newEngine(t, true, deletion.Options{SandboxConfirmer: confirmer, Observer: rec}), confirmer
}

// trackedAndChecked tracks the PU of live with sandbox and runs its first
// check, which asks the confirmer alone (the strict extractor mock fails
// the test if it is asked) and keeps the PU.
func trackedAndChecked(t *testing.T, c *deletion.Engine, m *mockPorts, confirmer *mocks.MockSandboxExtractor, live *corev1.Pod, sandbox string) {
	t.Helper()
	require.NoError(t, c.Track(entryWith(sandbox)))
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return(sandbox, nil)
	c.Sweep(context.Background())
	require.Equal(t, 1, c.Len())
	require.Equal(t, sandbox, c.Status()[0].SandboxID)
}

// TestSandboxConfirmerVetoesAStaleSandboxChange: the extractor's list
// still shows the sandbox the pod ran in before, while the runtime runs it
// in the one the PU has recorded (the main controller tracked the PU of
// the new sandbox after the list was made): the PU of a pod that runs is
// kept, and the veto is told to the Observer.
func TestSandboxConfirmerVetoesAStaleSandboxChange(t *testing.T) {
	m := newMockPorts(t)
	rec := &deletiontest.Events{}
	c, confirmer := sandboxConfirmed(t, m, rec)
	live := livePod(testUID, testNode)
	trackedAndChecked(t, c, m, confirmer, live, "sb-new")
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb-old", nil)
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb-new", nil)
	c.Sweep(context.Background())

	assert.Equal(t, 1, c.Len(), "the PU of the pod's running sandbox is kept")
	vetoes := rec.Of(deletion.EventVetoed)
	require.Len(t, vetoes, 1)
	assert.Equal(t, ports.ReasonSandboxChanged, vetoes[0].Reason, "the reason the extractor's answer gave")
	assert.Equal(t, 9, vetoes[0].Verdict.Row, "the confirmer's answer: the recorded sandbox")
	assert.True(t, c.Status()[0].Vetoed)
}

// TestSandboxConfirmerDecidesASandboxChange: when the runtime confirms
// another sandbox, the PU goes and the pod is requeued, as without a
// confirmer; the confirmer's answer is the one acted on.
func TestSandboxConfirmerDecidesASandboxChange(t *testing.T) {
	m := newMockPorts(t)
	c, confirmer := sandboxConfirmed(t, m, &deletiontest.Events{})
	live := livePod(testUID, testNode)
	trackedAndChecked(t, c, m, confirmer, live, "sb1")
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb3", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).Return(nil)
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}

// TestSandboxConfirmerRecordsTheRuntimesSandbox: a PU tracked without a
// sandbox records the one the runtime shows, never the list's: its first
// check asks the runtime alone; when the runtime shows no ready sandbox
// yet, a later periodic check whose list shows one (maybe the sandbox the
// pod ran in before) asks the runtime again before it records.
func TestSandboxConfirmerRecordsTheRuntimesSandbox(t *testing.T) {
	m := newMockPorts(t)
	c, confirmer := sandboxConfirmed(t, m, &deletiontest.Events{})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil).Times(3)
	gomock.InOrder(
		confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("", nil),       // the first check
		confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb-new", nil), // confirming the list's answer
	)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb-old", nil)
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	assert.Empty(t, c.Status()[0].SandboxID, "no ready sandbox: nothing recorded")
	c.Sweep(context.Background())
	assert.Equal(t, "sb-new", c.Status()[0].SandboxID, "the runtime's, not the list's")

	// Agreement with the record is not confirmed: the strict mock fails the
	// test if the confirmer is asked again.
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb-new", nil)
	c.Sweep(context.Background())
	assert.Equal(t, 1, c.Len())
}

// TestSandboxConfirmerFailureKeeps: a confirmer that fails or panics
// keeps the PU, and its failure is the PU's last error.
func TestSandboxConfirmerFailureKeeps(t *testing.T) {
	for name, answer := range map[string]func(context.Context, *corev1.Pod) (string, error){
		"fails":  func(context.Context, *corev1.Pod) (string, error) { return "", errBoom },
		"panics": func(context.Context, *corev1.Pod) (string, error) { panic("confirmer bug") },
	} {
		t.Run(name, func(t *testing.T) {
			m := newMockPorts(t)
			calls := 0
			c := m.newEngine(t, true, deletion.Options{SandboxConfirmer: ports.SandboxExtractorFunc(func(ctx context.Context, p *corev1.Pod) (string, error) {
				if calls++; calls == 1 {
					return "sb1", nil // the first check: the recorded sandbox
				}
				return answer(ctx, p)
			})})
			live := livePod(testUID, testNode)
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil).Times(2)
			m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
			require.NoError(t, c.Track(entryWith("sb1")))
			c.Sweep(context.Background())
			c.Sweep(context.Background())
			require.Equal(t, 1, c.Len(), "a confirmer that fails keeps the PU")
			st := c.Status()[0]
			assert.Equal(t, 6, st.LastVerdict.Row)
			assert.Error(t, st.LastErr)
			if name == "panics" {
				assert.ErrorIs(t, st.LastErr, deletion.ErrPortPanicked)
			}
		})
	}
}

// listingExtractor says it answers from a list up to a second old.
type listingExtractor struct{ ports.SandboxExtractor }

func (listingExtractor) MaxAge() time.Duration { return time.Second }

// TestSandboxConfirmerNeedsAnExtractor: a confirmer with nothing to
// confirm, or a typed nil one, is refused; so is an extractor that answers
// from a list (it has MaxAge) without a confirmer, or as the confirmer.
func TestSandboxConfirmerNeedsAnExtractor(t *testing.T) {
	m := newMockPorts(t)
	list := listingExtractor{m.extractor}
	_, err := deletion.New(m.getter, m.policy, deletion.Options{SandboxExtractor: list})
	assert.ErrorIs(t, err, deletion.ErrInvalidOptions, "a list without a confirmer")
	_, err = deletion.New(m.getter, m.policy, deletion.Options{SandboxExtractor: m.extractor, SandboxConfirmer: list})
	assert.ErrorIs(t, err, deletion.ErrInvalidOptions, "a list as the confirmer")
	_, err = deletion.New(m.getter, m.policy, deletion.Options{SandboxExtractor: list, SandboxConfirmer: m.extractor})
	assert.NoError(t, err, "a list confirmed by the runtime")

	_, err = deletion.New(m.getter, m.policy, deletion.Options{SandboxConfirmer: m.extractor})
	assert.ErrorIs(t, err, deletion.ErrInvalidOptions)
	var nilFunc ports.SandboxExtractorFunc
	_, err = deletion.New(m.getter, m.policy, deletion.Options{SandboxExtractor: m.extractor, SandboxConfirmer: nilFunc})
	assert.ErrorIs(t, err, deletion.ErrNilPort)
}

// TestTriggeredCheckAsksTheSandboxConfirmer: a check that TriggerPod asked
// for (the pod changed, as it does when its sandbox is replaced) asks the
// SandboxConfirmer alone, so the change is seen at once whatever the
// extractor's list shows; the next periodic check reads the extractor
// again.
func TestTriggeredCheckAsksTheSandboxConfirmer(t *testing.T) {
	m := newMockPorts(t)
	c, confirmer := sandboxConfirmed(t, m, &deletiontest.Events{})
	live := livePod(testUID, testNode)
	trackedAndChecked(t, c, m, confirmer, live, "sb1")
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil).Times(2)

	// Triggered: the strict extractor mock fails the test if it is asked.
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb1", nil)
	c.TriggerPod(testKey)
	c.Sweep(context.Background())
	assert.Equal(t, 1, c.Len())

	// Periodic: the extractor answers, and agreeing, is not confirmed.
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb1", nil)
	c.Sweep(context.Background())
	assert.Equal(t, 1, c.Len())
}

// TestTriggeredSandboxChangeIsDestroyedAtOnce: the extractor's list still
// shows the old sandbox, but the triggered check asks the runtime, which
// runs the pod in a new one: the PU of the old sandbox goes in that check.
func TestTriggeredSandboxChangeIsDestroyedAtOnce(t *testing.T) {
	m := newMockPorts(t)
	c, confirmer := sandboxConfirmed(t, m, &deletiontest.Events{})
	live := livePod(testUID, testNode)
	trackedAndChecked(t, c, m, confirmer, live, "sb1")
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).Return(nil)
	c.TriggerPod(testKey)
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}

// TestBothConfirmers: the PodGetter says the pod is gone, the Confirmer
// sees it alive, and the list shows another sandbox than recorded: the
// SandboxConfirmer is asked too, and since the runtime runs the pod in the
// recorded sandbox, the PU is kept.
func TestBothConfirmers(t *testing.T) {
	m := newMockPorts(t)
	podConfirmer := mocks.NewMockPodGetter(gomock.NewController(t))
	sandboxConfirmer := mocks.NewMockSandboxExtractor(gomock.NewController(t))
	rec := &deletiontest.Events{}
	c := m.newEngine(t, true, deletion.Options{Confirmer: podConfirmer, SandboxConfirmer: sandboxConfirmer, Observer: rec})
	live := livePod(testUID, testNode)
	trackedAndChecked(t, c, m, sandboxConfirmer, live, "sb1")

	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(nil, ports.ErrPodNotFound)
	podConfirmer.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb-old", nil)
	sandboxConfirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb1", nil)
	c.Sweep(context.Background())
	assert.Equal(t, 1, c.Len(), "the PU of the pod's running sandbox is kept")
	assert.Equal(t, 9, c.Status()[0].LastVerdict.Row)
	assert.NotEmpty(t, rec.Of(deletion.EventVetoed))
}
