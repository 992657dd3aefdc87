package cni

import (
	"os"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// skipLog logs each cache entry the collector skips once, and again once
// what it tells changes (another container, pod or reason: a file written
// anew, not one touched); it forgets an entry that is no longer skipped.
// It is safe from any goroutine.
type skipLog struct {
	log logr.Logger
	msg string

	mu sync.Mutex
	// reported holds the entries logged, with what they were logged for.
	reported map[string]string
}

// newSkipLog returns a skipLog that logs each file with msg.
func newSkipLog(log logr.Logger, msg string) *skipLog {
	return &skipLog{log: log, msg: msg, reported: make(map[string]string)}
}

// report logs what skips holds that was not logged yet, and returns it;
// it forgets what skips no longer holds, but for the files of which the
// read said nothing (unknown; nil: it read every file).
func (l *skipLog) report(skips []skipped, unknown func(path string) bool) []skipped {
	seen := make(map[string]bool, len(skips))
	l.mu.Lock()
	var fresh []skipped
	for _, s := range skips {
		seen[s.File] = true
		told := s.ContainerID + "\x00" + s.PodUID + "\x00" + s.Why
		if t, ok := l.reported[s.File]; !ok || t != told {
			l.reported[s.File] = told
			fresh = append(fresh, s)
		}
	}
	for f := range l.reported {
		if !seen[f] && (unknown == nil || !unknown(f)) {
			delete(l.reported, f)
		}
	}
	l.mu.Unlock()
	for _, s := range fresh {
		if !s.Quiet {
			l.log.Info(l.msg, "file", s.File, "why", s.Why)
		}
	}
	return fresh
}

// under reports whether path is in one of dirs (or is one).
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, string(os.PathSeparator))+string(os.PathSeparator)) {
			return true
		}
	}
	return false
}
