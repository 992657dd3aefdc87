package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	fakeremote "k8s.io/cri-client/pkg/fake"

	"github.com/podsweeper/podsweeper/adapters/cni"
	"github.com/podsweeper/podsweeper/internal/testkube"
)

// README.md: a reservation "of a network whose config is gone (reported once in the log ...)", and cache
// entries of another runtime: "each is logged once and left as it is". Those lines are the only record
// of each, so the log's sampling (100 lines a second of one message, then one in 100) must keep every
// one: 250 reservations of a removed network and 250 entries of another runtime give 250 lines each.
func TestWhatIsLoggedOnceIsNeverSampledOut(t *testing.T) {
	_, kubeconfig := testkube.StartAPIServer(t)
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfigPath, kubeconfig, 0o600))
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	fake := fakeremote.NewFakeRemoteRuntime()
	require.NoError(t, fake.Start(endpoint))
	t.Cleanup(fake.Stop)
	cache, bin, conf, data := filepath.Join(dir, "cni"), filepath.Join(dir, "bin"), filepath.Join(dir, "net.d"), filepath.Join(dir, "networks")
	for _, d := range []string{filepath.Join(cache, "results"), bin, conf, filepath.Join(data, "removed")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	// A network that keeps its reservations in data: the collector reads them, and those of "removed" have no config.
	require.NoError(t, os.WriteFile(filepath.Join(conf, "10-netx.conflist"), fmt.Appendf(nil,
		`{"cniVersion":"1.0.0","name":"netx","plugins":[{"type":"bridge","ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.9.0.0/24"}]]}}]}`, data), 0o644))
	const n = 250
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(data, "removed", fmt.Sprintf("10.8.%d.%d", i/200, 1+i%200)), fmt.Appendf(nil, "ctr-%03d\r\neth0", i), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(cache, "results", fmt.Sprintf("other-nerdctl%03d-eth0", i)),
			fmt.Appendf(nil, `{"kind":"cniCacheV1","containerId":"nerdctl%03d","ifName":"eth0","networkName":"other","config":"e30="}`, i), 0o644))
	}
	agent := startCollector(t, []string{"--kubeconfig=" + kubeconfigPath, "--node=node-a", "--cri-endpoint=" + endpoint,
		"--cni-cache-dir=" + cache, "--cni-bin-dir=" + bin, "--cni-conf-dir=" + conf,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--resync-interval=1s"})
	defer agent.terminate(t)
	count := func(msg string) int { return strings.Count(agent.logs.String(), `"msg":"`+msg+`"`) }
	for deadline := time.Now().Add(30 * time.Second); count(cni.LogMessageReservationSkipped) < n || count(cni.LogMessageEntrySkipped) < n; {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // more resyncs: still once each
	require.Equal(t, n, count(cni.LogMessageReservationSkipped), "reservations of a removed network logged")
	require.Equal(t, n, count(cni.LogMessageEntrySkipped), "entries of another runtime logged")
}
