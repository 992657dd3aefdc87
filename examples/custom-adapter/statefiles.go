package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// ErrBadPUID: a PUID that cannot name a state file (empty, or a path such
// as "../etc/passwd"). Match it with errors.Is.
var ErrBadPUID = errors.New("bad PUID")

// StateFiles is a PolicyHandler of one's own, in plain Go: the agent keeps
// one state file per PU, Dir/<PUID>.state (say, the firewall set it
// programmed, with the pod it is for), and destroying the PU removes it.
//
// It shows the three answers a PolicyHandler gives: nil when the PU is gone
// (also when it was gone already, so a retried destroy is harmless), a
// ports.Permanent error when retrying cannot help, and a plain error, which
// the engine retries with backoff.
//
// The files outlive the agent, so they are an Inventory too: given as
// deletion.Options.Inventory, ListPUs tells an engine starting after a
// restart which PUs exist, and it destroys those whose pods went away
// meanwhile.
//
// An Inventory must also keep what the engine learns of a PU: given as
// deletion.Options.Observer, StateFiles writes the sandbox the engine
// records for a PU tracked without one (EventAdopted) into its file, so that
// after a restart a sandbox replaced while the agent was down is destroyed
// as changed (ports.ReasonSandboxChanged) instead of taken as the PU's first.
type StateFiles struct {
	// Dir is the directory of the state files.
	Dir string

	// mu serializes Create, Observe's rewrite and DestroyPU's remove, so
	// that a sandbox recorded while the PU's file is removed never brings
	// the file back.
	mu sync.Mutex
}

var (
	_ ports.PolicyHandler = (*StateFiles)(nil)
	_ ports.Inventory     = (*StateFiles)(nil)
	_ deletion.Observer   = (*StateFiles)(nil)
)

// stateFile is what a state file holds: the pod the PU is for, so that it
// can be checked again after a restart, and the agent's own state.
type stateFile struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	SandboxID string `json:"sandboxID,omitempty"`
	State     []byte `json:"state,omitempty"`
}

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

// Create writes the state file of pu; the agent calls it when it creates
// the PU. The file is written to a temporary name, synced, then renamed, so
// that a crash leaves the old file or the new one, never half of one.
func (s *StateFiles) Create(pu ports.PU, state []byte) error {
	p, err := s.Path(pu.PUID)
	if err != nil {
		return err
	}
	if pu.Pod.Namespace == "" || pu.Pod.Name == "" {
		return fmt.Errorf("create state of PU %s: the pod's namespace and name are required, got %q", pu.PUID, pu.Pod)
	}
	b, err := json.Marshal(stateFile{Namespace: pu.Pod.Namespace, Name: pu.Pod.Name, SandboxID: pu.SandboxID, State: state})
	if err != nil {
		return fmt.Errorf("create state of PU %s: %w", pu.PUID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := writeFileAtomic(p, b); err != nil {
		return fmt.Errorf("create state of PU %s: %w", pu.PUID, err)
	}
	return nil
}

// Observe writes into the PU's state file the sandbox the engine recorded
// for it (EventAdopted: its first check found the pod's sandbox, the PU
// having been tracked without one), so that ListPUs lists the PU with it
// after a restart. Only an existing file without that sandbox is
// rewritten: a PU whose file is gone is not brought back.
//
// The other events need nothing: the agent creates the file before it
// tracks the PU (EventTracked), DestroyPU removes it before EventDestroyed,
// and the file of an abandoned PU (EventAbandoned) stays, so that the
// engine started after a restart tries it again. An agent that tears a PU
// down itself removes its file with its own state, then calls Untrack
// (EventUntracked).
//
// Observe cannot return an error: one it meets is printed to standard
// error, and the PU goes on being tracked with its sandbox in memory.
func (s *StateFiles) Observe(ev deletion.Event) {
	if ev.Kind != deletion.EventAdopted || ev.PU.SandboxID == "" {
		return
	}
	if err := s.recordSandbox(ev.PU); err != nil {
		fmt.Fprintf(os.Stderr, "state files: recording sandbox %s of PU %s: %v\n", ev.PU.SandboxID, ev.PU.PUID, err)
	}
}

// recordSandbox rewrites the state file of pu with pu's sandbox, if the
// file exists, is of the same pod and has no other sandbox.
func (s *StateFiles) recordSandbox(pu ports.PU) error {
	p, err := s.Path(pu.PUID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // destroyed meanwhile
	}
	if err != nil {
		return err
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	recorded := ports.PU{PUID: pu.PUID, Pod: types.NamespacedName{Namespace: f.Namespace, Name: f.Name}, SandboxID: f.SandboxID}
	if recorded.WithRecordedSandbox(pu) == recorded {
		return nil // written already, or the file is of another pod or sandbox
	}
	f.SandboxID = pu.SandboxID
	if b, err = json.Marshal(f); err != nil {
		return err
	}
	return writeFileAtomic(p, b)
}

func writeFileAtomic(path string, b []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ListPUs returns the PU of every state file, sorted by PUID. A file removed
// while it lists (a destroy under way) is no PU; a file it cannot read or
// parse fails the list, naming the file: the engine logs the error and asks
// again later.
func (s *StateFiles) ListPUs(ctx context.Context) ([]ports.PU, error) {
	paths, err := filepath.Glob(filepath.Join(s.Dir, "*.state"))
	if err != nil {
		return nil, fmt.Errorf("list state files: %w", err)
	}
	pus := make([]ports.PU, 0, len(paths))
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("list state files: %w", err)
		}
		puid := strings.TrimSuffix(filepath.Base(p), ".state")
		if _, err := s.Path(puid); err != nil {
			return nil, fmt.Errorf("list state files: %s: %w", p, err)
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // destroyed since the directory was read: no PU to list
		}
		if err != nil {
			return nil, fmt.Errorf("list state files: %w", err)
		}
		var f stateFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("list state files: %s: %w", p, err)
		}
		pus = append(pus, ports.PU{PUID: puid, Pod: types.NamespacedName{Namespace: f.Namespace, Name: f.Name}, SandboxID: f.SandboxID})
	}
	slices.SortFunc(pus, func(a, b ports.PU) int { return cmp.Compare(a.PUID, b.PUID) })
	return pus, nil
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("destroy PU %s: %w", ev.PUID, err)
	}
	return nil
}
