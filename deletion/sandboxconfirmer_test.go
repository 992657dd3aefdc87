package deletion_test

import (
	"context"
	"testing"

	"github.com/golang/mock/gomock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/mocks"
	"github.com/podsweeper/podsweeper/ports"
)

// sandboxConfirmed is an engine whose SandboxExtractor (m.extractor, a
// list that may be a moment old) is confirmed by confirmer, the runtime
// asked right then.
func sandboxConfirmed(t *testing.T, m *mockPorts, rec *events) (*deletion.Engine, *mocks.MockSandboxExtractor) {
	t.Helper()
	confirmer := mocks.NewMockSandboxExtractor(gomock.NewController(t))
	return m.newEngine(t, true, deletion.Options{SandboxConfirmer: confirmer, Observer: rec}), confirmer
}

// TestSandboxConfirmerVetoesAStaleSandboxChange: the extractor's list
// still shows the sandbox the pod ran in before, while the runtime runs it
// in the one the PU has recorded (the main controller tracked the PU of
// the new sandbox after the list was made): the PU of a pod that runs is
// kept, and the veto is told to the Observer.
func TestSandboxConfirmerVetoesAStaleSandboxChange(t *testing.T) {
	m := newMockPorts(t)
	rec := &events{}
	c, confirmer := sandboxConfirmed(t, m, rec)
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb-old", nil)
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb-new", nil)
	require.NoError(t, c.Track(entryWith("sb-new")))
	c.Sweep(context.Background())

	assert.Equal(t, 1, c.Len(), "the PU of the pod's running sandbox is kept")
	vetoes := rec.kinds(deletion.EventVetoed)
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
	c, confirmer := sandboxConfirmed(t, m, &events{})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb3", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).Return(nil)
	require.NoError(t, c.Track(entryWith("sb1")))
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}

// TestSandboxConfirmerRecordsTheRuntimesSandbox: a PU tracked without a
// sandbox records the one the runtime confirms, not the list's (which may
// still show the sandbox the pod ran in before); when the runtime shows no
// ready sandbox, nothing is recorded.
func TestSandboxConfirmerRecordsTheRuntimesSandbox(t *testing.T) {
	m := newMockPorts(t)
	c, confirmer := sandboxConfirmed(t, m, &events{})
	live := livePod(testUID, testNode)
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil).Times(3)
	m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb-old", nil).Times(2)
	gomock.InOrder(
		confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("", nil),
		confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb-new", nil),
	)
	require.NoError(t, c.Track(entryWith("")))
	c.Sweep(context.Background())
	assert.Empty(t, c.Status()[0].SandboxID, "no ready sandbox confirmed: nothing recorded")
	c.Sweep(context.Background())
	assert.Equal(t, "sb-new", c.Status()[0].SandboxID)

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
			c := m.newEngine(t, true, deletion.Options{SandboxConfirmer: ports.SandboxExtractorFunc(answer)})
			live := livePod(testUID, testNode)
			m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
			m.extractor.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
			require.NoError(t, c.Track(entryWith("sb1")))
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

// TestSandboxConfirmerNeedsAnExtractor: a confirmer with nothing to
// confirm, or a typed nil one, is refused.
func TestSandboxConfirmerNeedsAnExtractor(t *testing.T) {
	m := newMockPorts(t)
	_, err := deletion.New(m.getter, m.policy, deletion.Options{SandboxConfirmer: m.extractor})
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
	c, confirmer := sandboxConfirmed(t, m, &events{})
	live := livePod(testUID, testNode)
	require.NoError(t, c.Track(entryWith("sb1")))
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
	c, confirmer := sandboxConfirmed(t, m, &events{})
	live := livePod(testUID, testNode)
	require.NoError(t, c.Track(entryWith("sb1")))
	m.getter.EXPECT().GetPod(gomock.Any(), testKey).Return(live, nil)
	confirmer.EXPECT().SandboxID(gomock.Any(), live).Return("sb2", nil)
	m.policy.EXPECT().DestroyPU(gomock.Any(), destroyEvent("sb1", ports.ReasonSandboxChanged)).Return(nil)
	m.requeuer.EXPECT().Requeue(gomock.Any(), live).Return(nil)
	c.TriggerPod(testKey)
	c.Sweep(context.Background())
	assert.Zero(t, c.Len())
}
