package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/podsweeper/podsweeper/ports"
)

// ErrBadPUID: a PUID that cannot name a state file (empty, or a path such
// as "../etc/passwd"). Match it with errors.Is.
var ErrBadPUID = errors.New("bad PUID")

// StateFiles is a PolicyHandler of one's own, in plain Go: the agent keeps
// one state file per PU, Dir/<PUID>.state (say, the firewall set it
// programmed), and destroying the PU removes it.
//
// It shows the three answers a PolicyHandler gives: nil when the PU is gone
// (also when it was gone already, so a retried destroy is harmless), a
// ports.Permanent error when retrying cannot help, and a plain error, which
// the engine retries with backoff.
type StateFiles struct {
	Dir string
}

var _ ports.PolicyHandler = (*StateFiles)(nil)

// Path returns the state file of puid, or an error wrapping ErrBadPUID when
// puid is not a plain name: PUIDs are pod UIDs, so letters, digits, '-',
// '_' and '.', at most 128 of them, not starting with '.'. Anything else,
// a path such as "../etc/passwd" first of all, is refused.
func (s *StateFiles) Path(puid string) (string, error) {
	if puid == "" || len(puid) > 128 || puid[0] == '.' ||
		strings.IndexFunc(puid, func(r rune) bool { return !isNameRune(r) }) >= 0 {
		return "", fmt.Errorf("%w: %q", ErrBadPUID, puid)
	}
	return filepath.Join(s.Dir, puid+".state"), nil
}

func isNameRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.'
}

// Create writes the state file of puid; the agent calls it when it creates the PU.
func (s *StateFiles) Create(puid string, state []byte) error {
	p, err := s.Path(puid)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, state, 0o600); err != nil {
		return fmt.Errorf("create state of PU %s: %w", puid, err)
	}
	return nil
}

// DestroyPU removes the state file of ev.PUID.
func (s *StateFiles) DestroyPU(ctx context.Context, ev ports.DestroyEvent) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("destroy PU %s: %w", ev.PUID, err)
	}
	p, err := s.Path(ev.PUID)
	if err != nil {
		// Retrying will not make the PUID any better.
		return ports.Permanent(fmt.Errorf("destroy PU of pod %s: %w", ev.Pod, err))
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("destroy PU %s: %w", ev.PUID, err)
	}
	return nil
}
