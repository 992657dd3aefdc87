package testkube

import (
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Lines records the lines of a logger (Logger), for tests that count
// them. Its zero value is ready; it is safe from any goroutine.
type Lines struct {
	mu  sync.Mutex
	all []string
}

// Logger returns a logger that records each line in l.
func (l *Lines) Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.all = append(l.all, prefix+" "+args)
	}, funcr.Options{})
}

// Count returns how many recorded lines contain substr.
func (l *Lines) Count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.all {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}
