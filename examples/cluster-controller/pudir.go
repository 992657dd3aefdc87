package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

// puDir stands for the external system that holds a resource per pod (an
// endpoint object, a registration entry, a DNS record, a cloud lease): a
// directory with one file per PU, named by the PU's ID (the pod's UID) and
// holding the pod's namespace/name. It is the engine's Inventory (ListPUs),
// its PolicyHandler (DestroyPU removes the file) and an Observer that
// registers every PU the engine tracks (writes its file), as a controller
// that creates a registration per pod does. A real controller calls its
// system's API in these three places instead. The replicas of a Deployment
// must share the directory (a ReadWriteMany volume): it is the state that
// outlives the leader.
type puDir struct {
	dir string
	log logr.Logger
}

var (
	_ ports.Inventory     = (*puDir)(nil)
	_ ports.PolicyHandler = (*puDir)(nil)
	_ deletion.Observer   = (*puDir)(nil)
)

// errBadPUID: a PU ID that cannot name a file of the directory.
var errBadPUID = errors.New("PU ID is not a plain file name")

// newPUDir returns the external system kept in dir, which must exist.
func newPUDir(dir string, log logr.Logger) (*puDir, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("PU directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("PU directory: %s is not a directory", dir)
	}
	return &puDir{dir: dir, log: log}, nil
}

// path returns the file of the PU puid.
func (d *puDir) path(puid string) (string, error) {
	if puid == "" || strings.HasPrefix(puid, ".") || filepath.Base(puid) != puid {
		return "", fmt.Errorf("%w: %q", errBadPUID, puid)
	}
	return filepath.Join(d.dir, puid), nil
}

// ListPUs lists every PU the directory holds. Files whose name starts with
// a dot (registrations being written) are skipped; a file that does not
// hold a namespace/name is logged and skipped.
func (d *puDir) ListPUs(ctx context.Context) ([]ports.PU, error) {
	des, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("listing PUs: %w", err)
	}
	pus := make([]ports.PU, 0, len(des))
	for _, de := range des {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !de.Type().IsRegular() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d.dir, de.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // destroyed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("reading PU %s: %w", de.Name(), err)
		}
		ns, name, ok := strings.Cut(strings.TrimSpace(string(b)), "/")
		if !ok || ns == "" || name == "" {
			d.log.Error(nil, "skipping a PU file that does not hold namespace/name", "file", de.Name())
			continue
		}
		pus = append(pus, ports.PU{PUID: de.Name(), Pod: types.NamespacedName{Namespace: ns, Name: name}})
	}
	return pus, nil
}

// DestroyPU removes the PU's file. A PU already gone counts as destroyed: a
// leader that lost its lease during the call, or before, may have removed
// it already.
func (d *puDir) DestroyPU(_ context.Context, ev ports.DestroyEvent) error {
	p, err := d.path(ev.PUID)
	if err != nil {
		return ports.Permanent(err)
	}
	d.log.Info(logDestroying, "puID", ev.PUID, "pod", ev.Pod.String(), "reason", string(ev.Reason))
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("destroying PU %s: %w", ev.PUID, err)
	}
	return nil
}

// logDestroying is the message of the line DestroyPU logs for each PU.
const logDestroying = "destroying PU"

// register writes the file of the PU of e unless it exists: the file is
// written under a dot name and renamed, so that ListPUs never reads half
// of one.
func (d *puDir) register(e ports.PU) error {
	p, err := d.path(e.PUID)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	tmp := filepath.Join(d.dir, "."+e.PUID)
	if err := os.WriteFile(tmp, []byte(e.Pod.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("registering PU %s: %w", e.PUID, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("registering PU %s: %w", e.PUID, err)
	}
	return nil
}

// Observe registers every PU the engine tracks (EventTracked).
func (d *puDir) Observe(ev deletion.Event) {
	if ev.Kind != deletion.EventTracked {
		return
	}
	if err := d.register(ev.PU); err != nil {
		d.log.Error(err, "registering PU failed", "puID", ev.PU.PUID, "pod", ev.PU.Pod.String())
	}
}
