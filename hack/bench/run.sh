#!/usr/bin/env bash
# hack/bench/run.sh: runs the benchmarks of package deletion
# BENCH_COUNT times (6 by default; those at cluster scale CLUSTER_COUNT
# times, 3 by default), keeps the raw output in BENCH_OUT
# (bin/bench/bench.txt), and prints benchstat's summary and the ratios of the
# engine against the seed's loop (internal/seedref). Run it from `make bench`.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
COUNT=${BENCH_COUNT:-6}
CLUSTER_COUNT=${CLUSTER_COUNT:-3}
OUT=${BENCH_OUT:-bin/bench/bench.txt}
# golang.org/x/perf has no tagged release; this is its newest pseudo-version.
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

mkdir -p "$(dirname "$OUT")"
{
	date -u +'# %Y-%m-%dT%H:%M:%SZ'
	echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	$GO test -run='^$' -bench='^Benchmark(Decide|TriggerPod|Drain)$' -benchmem -count="$COUNT" ./deletion/
	# The destroy rate, in fake time (testing/synctest): 100 destroys at 10 a second.
	$GO test -run='^TestDestroyRateSpreadsDestroysAndLosesNone$' -count=1 -v ./deletion/ | grep -E '^\s+rollout_test.go:[0-9]+: destroy rate:' | sed 's/^\s*/# /'
	# Steady state: node scale in 10 s windows; cluster scale in windows of
	# one 60 s interval, CLUSTER_COUNT times (3 by default: 3 minutes each side).
	$GO test -run='^$' -bench='^BenchmarkSteadyState$/scale=node/' -count="$COUNT" ./deletion/
	$GO test -run='^$' -bench='^BenchmarkSteadyState$/scale=cluster/' -count="$CLUSTER_COUNT" ./deletion/
	# Track: exactly 150,000 distinct entries per run, the cluster scale.
	$GO test -run='^$' -bench='^BenchmarkTrack$' -benchtime=150000x -benchmem -count="$COUNT" ./deletion/
	# The cluster-wide engine at 150,000 PUs: TriggerAll, a drain of 10,000
	# pods with the drain's latencies, and the steady state at 60 s, each
	# CLUSTER_COUNT times. The seed's drain at this scale lasts about 500 s
	# a run: SLOW_SEED=1 runs it once (-bench.slowseed).
	$GO test -run='^$' -bench='^BenchmarkTriggerAll$' -benchtime=3x -count="$CLUSTER_COUNT" ./deletion/
	$GO test -run='^$' -bench='^BenchmarkClusterDrain$/engine' -benchtime=1x -count="$CLUSTER_COUNT" ./deletion/
	$GO test -run='^$' -bench='^BenchmarkSteadyState$/scale=cluster-wide/' -count="$CLUSTER_COUNT" ./deletion/
	if [ "${SLOW_SEED:-0}" = 1 ]; then
		$GO test -run='^$' -bench='^BenchmarkClusterDrain$/seed' -benchtime=1x -count=1 -timeout=30m ./deletion/ -bench.slowseed
	fi
	echo "# load average $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"

echo
echo "== benchstat $OUT"
$GO run "$BENCHSTAT" "$OUT"
echo
echo "== engine against the seed's loop (medians of $COUNT runs)"
$GO run ./hack/bench/ratios "$OUT"
