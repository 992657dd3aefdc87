package main

// Rendering the plugin's answers in tests, and checking what they say.

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// rendered is what render writes.
func rendered(t *testing.T, render func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := render(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// podText is x as text.
func podText(t *testing.T, x *PodExplanation) string {
	t.Helper()
	return rendered(t, func(b *bytes.Buffer) error { return RenderPod(b, x) })
}

// ipText is x as text.
func ipText(t *testing.T, x *IPExplanation) string {
	t.Helper()
	return rendered(t, func(b *bytes.Buffer) error { return RenderIP(b, x) })
}

// podTextAndJSON is x as text and as JSON.
func podTextAndJSON(t *testing.T, x *PodExplanation) (string, string) {
	t.Helper()
	return podText(t, x), rendered(t, func(b *bytes.Buffer) error { return RenderPodJSON(b, x) })
}

// ipTextAndJSON is x as text and as JSON.
func ipTextAndJSON(t *testing.T, x *IPExplanation) (string, string) {
	t.Helper()
	return ipText(t, x), rendered(t, func(b *bytes.Buffer) error { return RenderIPJSON(b, x) })
}

// wantSays fails unless s contains sub.
func wantSays(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s does not say %q:\n%s", what, sub, s)
	}
}

// wantNotSays fails if s contains sub.
func wantNotSays(t *testing.T, what, s, sub string) {
	t.Helper()
	if strings.Contains(s, sub) {
		t.Errorf("%s says %q:\n%s", what, sub, s)
	}
}

// statusText asks c for status --node node at now, and renders it for a person.
func statusText(t *testing.T, c *cluster, node string, now time.Time) string {
	t.Helper()
	s, err := c.status(testContext(t), node, now)
	if err != nil {
		t.Fatal(err)
	}
	return rendered(t, func(b *bytes.Buffer) error { return RenderStatus(b, s) })
}

// reportText asks c for report at now, and renders it for a person.
func reportText(t *testing.T, c *cluster, now time.Time) string {
	t.Helper()
	r, err := c.report(testContext(t), now)
	if err != nil {
		t.Fatal(err)
	}
	return rendered(t, func(b *bytes.Buffer) error { return RenderReport(b, r) })
}
