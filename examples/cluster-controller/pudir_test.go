package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/ports"
)

func TestPUDirRegistersListsAndDestroys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := newPUDir(dir, logr.Discard())
	require.NoError(t, err)
	web := ports.PU{PUID: "uid-web", Pod: types.NamespacedName{Namespace: "shop", Name: "web"}}
	db := ports.PU{PUID: "uid-db", Pod: types.NamespacedName{Namespace: "shop", Name: "db"}}
	d.Observe(deletion.Event{Kind: deletion.EventTracked, PU: web})
	d.Observe(deletion.Event{Kind: deletion.EventTracked, PU: db})
	d.Observe(deletion.Event{Kind: deletion.EventTracked, PU: web}) // registered already: kept as it is
	d.Observe(deletion.Event{Kind: deletion.EventDestroyed, PU: ports.PU{PUID: "uid-other", Pod: web.Pod}})
	// Skipped by ListPUs: a registration being written, a file that holds
	// no pod, a directory.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".uid-half"), []byte("shop/half\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "uid-junk"), []byte("junk\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))

	pus, err := d.ListPUs(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []ports.PU{db, web}, pus)

	require.NoError(t, d.DestroyPU(ctx, ports.DestroyEvent{PUID: web.PUID, Pod: web.Pod, Reason: ports.ReasonPodGone}))
	require.NoError(t, d.DestroyPU(ctx, ports.DestroyEvent{PUID: web.PUID, Pod: web.Pod, Reason: ports.ReasonPodGone}),
		"a PU gone already is destroyed: the previous leader may have removed it")
	pus, err = d.ListPUs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []ports.PU{db}, pus)
}

func TestPUDirRefusesBadInput(t *testing.T) {
	_, err := newPUDir(filepath.Join(t.TempDir(), "missing"), logr.Discard())
	require.Error(t, err)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = newPUDir(file, logr.Discard())
	require.ErrorContains(t, err, "not a directory")

	d, err := newPUDir(t.TempDir(), logr.Discard())
	require.NoError(t, err)
	for _, puid := range []string{"", ".", "..", "../x", "a/b", ".hidden"} {
		err := d.DestroyPU(context.Background(), ports.DestroyEvent{PUID: puid})
		require.ErrorIs(t, err, errBadPUID, "PUID %q", puid)
		assert.True(t, ports.IsPermanent(err), "a PUID that names no file is never retried")
		assert.ErrorIs(t, d.register(ports.PU{PUID: puid}), errBadPUID)
	}
}
