package deletion_test

import (
	"sync"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/types"
)

func key2(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// countingSink counts the log lines by level and message.
type countingSink struct {
	mu     *sync.Mutex
	errors map[string]int
	infos  map[string]int
}

func newCountingLogger() (logr.Logger, *countingSink) {
	s := &countingSink{mu: &sync.Mutex{}, errors: map[string]int{}, infos: map[string]int{}}
	return logr.New(s), s
}

func (s *countingSink) Init(logr.RuntimeInfo)  {}
func (s *countingSink) Enabled(level int) bool { return level == 0 }
func (s *countingSink) Info(_ int, msg string, _ ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.infos[msg]++
}
func (s *countingSink) Error(_ error, msg string, _ ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors[msg]++
}
func (s *countingSink) WithValues(...any) logr.LogSink { return s }
func (s *countingSink) WithName(string) logr.LogSink   { return s }

func (s *countingSink) errorLines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.errors {
		n += c
	}
	return n
}
