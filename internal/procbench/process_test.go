package procbench

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CPU reads this process's own time, which grows while it spins: it sees
// the CPU time the kernel's rusage counts, to the tick (10 ms) of
// /proc/<pid>/stat, however busy the machine is.
func TestCPUGrowsWithWork(t *testing.T) {
	before, err := CPU(os.Getpid())
	require.NoError(t, err)
	start := rusage(t)
	for n := 0; rusage(t)-start < 150*time.Millisecond; n++ {
		_ = strings.Repeat("x", n%64)
	}
	after, err := CPU(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after-before, 100*time.Millisecond, "150 ms of CPU by rusage reads as at least 100 ms")
}

// rusage is this process's user and system time, as getrusage(2) counts it.
func rusage(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestRSSOfThisProcess(t *testing.T) {
	rss, err := RSS(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, rss, int64(1<<20), "a Go test binary holds more than 1 MiB")
}

func TestCPUOfNoProcess(t *testing.T) {
	_, err := CPU(-1)
	assert.Error(t, err)
}

func TestHeapAllocFromTheProfile(t *testing.T) {
	n, err := heapAlloc(strings.NewReader("heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 10\n# HeapAlloc = 123456\n# Sys = 9\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(123456), n)
	_, err = heapAlloc(strings.NewReader("# Alloc = 10\n"))
	assert.Error(t, err)
}

func TestPercentileNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	assert.Equal(t, time.Duration(50), Percentile(d, 50))
	assert.Equal(t, time.Duration(99), Percentile(d, 99))
	assert.Equal(t, time.Duration(100), Percentile(d, 100))
	assert.Equal(t, time.Duration(7), Percentile([]time.Duration{7}, 99))
	assert.Equal(t, time.Duration(0), Percentile(nil, 50))
}

func TestMetricReadsASample(t *testing.T) {
	text := "# HELP x y\npodsweeper_tracked_pus 110\npodsweeper_destroys_total{reason=\"PodGone\"} 3\nother 1\n"
	assert.Equal(t, 110.0, Metric(text, "podsweeper_tracked_pus"))
	assert.Equal(t, 3.0, Metric(text, `podsweeper_destroys_total{reason="PodGone"}`))
	assert.Equal(t, -1.0, Metric(text, "podsweeper_tracked"), "a prefix is not the sample")
	assert.Equal(t, -1.0, Metric("", "other"))
}

func TestLoadAvgHasThreeFigures(t *testing.T) {
	assert.Len(t, strings.Fields(LoadAvg()), 3)
}

// Sum adds the samples of one metric whose labels include the ones asked
// for, and no other metric's (one whose name the asked one prefixes).
func TestSum(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests.
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12
rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 3
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 5
rest_client_requests_total_other{method="GET"} 100
apiserver_request_total{group="events.k8s.io",resource="events",verb="POST",note="a \"quoted\", value"} 7
apiserver_request_total{group="",resource="events",verb="POST"} 9
plain 2.5
`
	assert.Equal(t, 15.0, Sum(text, "rest_client_requests_total", map[string]string{"method": "GET"}))
	assert.Equal(t, 20.0, Sum(text, "rest_client_requests_total", nil))
	assert.Equal(t, 7.0, Sum(text, "apiserver_request_total", map[string]string{"group": "events.k8s.io", "verb": "POST"}))
	assert.Equal(t, 7.0, Sum(text, "apiserver_request_total", map[string]string{"note": `a "quoted", value`}))
	assert.Equal(t, 2.5, Sum(text, "plain", nil))
	assert.Zero(t, Sum(text, "missing", nil))
}
