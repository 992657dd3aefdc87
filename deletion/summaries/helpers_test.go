package summaries_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

var _ = context.Background
var _ = ports.PU{}
var _ = deletion.Options{}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// lines is a Logger that records every line.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.l = append(l.l, prefix+" "+args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 1})
}

func (l *lines) with(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.l {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

func (l *lines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.l, "\n")
}

var _ = testing.T{}
