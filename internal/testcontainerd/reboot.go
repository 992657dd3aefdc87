package testcontainerd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rebootScript runs inside the node once containerd and the kubelet are
// killed: it kills every other process of the node but its init (the shims
// and the containers; kill -1 spares init and the caller), waits for them
// to be gone, unmounts everything under /run and /var/lib/kubelet (the
// sandboxes' network namespaces and shm, the containers' root
// filesystems), deepest first, and empties /run (a tmpfs on a real node)
// and containerd's root. /var/lib/cni and the rest of /var/lib stay, as on
// a disk.
const rebootScript = `set -e
kill -KILL -1 2>/dev/null || true
i=0
while [ $i -lt 400 ]; do
	# Shell builtins only: a command run here would be a process too.
	others=
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = 1 ] || [ "$p" = $$ ] || others="$others $p"
	done
	[ -z "$others" ] && break
	i=$((i + 1))
	sleep 0.05
done
[ -z "$others" ] || { echo "still running:$others"; exit 1; }
awk '$5 ~ "^/run/" || $5 ~ "^/var/lib/kubelet/" || $5 ~ "^/var/lib/containerd/" { print $5 }' /proc/self/mountinfo |
	sort -r | while read -r m; do umount -n -l "$m"; done
rm -rf /run/* /var/lib/containerd
`

// Reboot makes the node lose containerd's state and keep /var/lib, as a
// reboot with a wiped runtime does: the kubelet and containerd are
// SIGKILLed, then the shims and the containers; everything mounted under
// /run and /var/lib/kubelet is unmounted, /run and containerd's root are
// emptied, the containers' cgroups removed; then containerd (the pause
// image imported again) and the kubelet start again. libcni's cache and
// host-local's address files are kept exactly as they were: the sandboxes
// they name are known to no runtime any more.
func (n *Node) Reboot(t testing.TB) {
	t.Helper()
	start := time.Now()
	n.StopKubelet()
	n.StopContainerd()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := n.Command(ctx, "sh", "-c", rebootScript).CombinedOutput()
	require.NoError(t, err, "rebooting node %s: %s", n.Name, out)
	require.Empty(t, strings.TrimSpace(string(out)), "rebooting node %s", n.Name)
	require.NoError(t, n.cgroups.removeChildren())
	t.Logf("node %s: down in %v", n.Name, time.Since(start).Round(time.Millisecond))
	n.StartContainerd(t)
	n.startKubelet(t)
}
