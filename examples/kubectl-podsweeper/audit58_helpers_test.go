package main

// audit58's helpers, on audit57's harness (fake clientset, fake port-forward).

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/adapters/k8s"
)

const (
	a58UID  = "6f1c2a4e-0d2b-4c4e-9a51-3f0c8e5b7d21"
	a58UID2 = "0b7e3d52-8c1a-4f0e-b6d2-9e4a1c7f5a30"
)

// a58JSON marshals v.
func a58JSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// a58PU is a PU of pod (ns/name) under uid, checked 5s before a57Now.
func a58PU(uid, pod string) k8s.PUStatus {
	c := a57Now.Add(-5 * time.Second)
	return k8s.PUStatus{PUID: uid, Pod: pod, State: "idle", Age: "4m0s", LastChecked: &c, LastRow: 9, Why: "same pod, same sandbox"}
}

// a58Status is a program answering its status page with pus and no dry run.
func a58Status(t *testing.T, engine string, pus ...k8s.PUStatus) http.Handler {
	t.Helper()
	if pus == nil {
		pus = []k8s.PUStatus{}
	}
	return a57Program(a57Now, engine, map[string]a57Page{k8s.StatusPath: {200, a58JSON(t, pus)}})
}

// a58AppPod is a workload pod.
func a58AppPod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// a58Has fails unless s contains sub.
func a58Has(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s does not say %q:\n%s", what, sub, s)
	}
}

// a58HasNot fails if s contains sub.
func a58HasNot(t *testing.T, what, s, sub string) {
	t.Helper()
	if strings.Contains(s, sub) {
		t.Errorf("%s says %q:\n%s", what, sub, s)
	}
}
