#!/usr/bin/env bash
# hack/bench/run.sh: runs the benchmarks of package deletion
# BENCH_COUNT times (6 by default; those at cluster scale CLUSTER_COUNT
# times, 3 by default), then those of the adapters ADAPTER_COUNT times (3 by
# default): adapters/bolt and adapters/cri always, adapters/k8s with a real
# API server (KUBEBUILDER_ASSETS), adapters/cni with the real CNI plugins
# (CNI_PLUGINS_DIR) in a private network namespace, as root only. It keeps
# the raw output in BENCH_OUT (bin/bench/bench.txt), says which benchmarks
# it skipped and why, and prints benchstat's summary and the ratios of the
# engine against the seed's loop (internal/seedref). Run it from `make
# bench`, which builds the API server and the plugins first. The examples'
# whole processes have their own target, `make bench-process`.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
COUNT=${BENCH_COUNT:-6}
CLUSTER_COUNT=${CLUSTER_COUNT:-3}
ADAPTER_COUNT=${ADAPTER_COUNT:-3}
# BENCH_ONLY=deletion or BENCH_ONLY=adapters runs those alone.
ONLY=${BENCH_ONLY:-}
OUT=${BENCH_OUT:-bin/bench/bench.txt}
# golang.org/x/perf has no tagged release; this is its newest pseudo-version.
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

# Why the benchmarks of a package that needs more than Go cannot run here,
# "" when they can.
need_api() {
	if [ -z "${KUBEBUILDER_ASSETS:-}" ] || [ ! -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] || [ ! -x "$KUBEBUILDER_ASSETS/etcd" ]; then
		echo "no kube-apiserver and etcd in KUBEBUILDER_ASSETS (${KUBEBUILDER_ASSETS:-unset}): run it from make bench, which builds them"
	fi
}
need_cni() {
	if [ "$(id -u)" != 0 ]; then
		echo "not root: they run the real CNI plugins in a private network and mount namespace, which only root can make"
		return
	fi
	local p
	for p in bridge host-local loopback; do
		if [ ! -x "${CNI_PLUGINS_DIR:-bin/cni}/$p" ]; then
			echo "no $p plugin in CNI_PLUGINS_DIR (${CNI_PLUGINS_DIR:-bin/cni}): run it from make bench, which builds them"
			return
		fi
	done
	need_api
}
# adapter PACKAGE WHY ARGS...: runs go test -bench ARGS on PACKAGE, or, when
# WHY is not empty, says why it does not.
adapter() {
	local pkg=$1 why=$2
	shift 2
	if [ -n "$why" ]; then
		echo "# skipped: the benchmarks of $pkg: $why"
		return
	fi
	$GO test -run='^$' "$@" -count="$ADAPTER_COUNT" "./$pkg/"
}

mkdir -p "$(dirname "$OUT")"
{
	date -u +'# %Y-%m-%dT%H:%M:%SZ'
	echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ "$ONLY" != adapters ]; then
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
	fi
	if [ "$ONLY" != deletion ]; then
		# The adapters: the journal's Track, restore and drain on a real file;
		# the CRI extractor on a fake runtime; pod reads from a real API
		# server's informer; a DEL per attachment and 100 leaked sandboxes
		# freed with the real CNI plugins (BENCHMARKS.md has each one's section).
		adapter adapters/bolt "" -bench=. -benchtime=1s
		adapter adapters/cri "" -bench='^BenchmarkSandboxID$' -benchmem
		adapter adapters/k8s "$(need_api)" -bench='^Benchmark(PodRead|PodStore)$' -benchmem
		adapter adapters/cni "$(need_cni)" -bench='^Benchmark(DEL|Free100)$' -benchtime=3x
	fi
	echo "# load average $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"

echo
echo "== benchstat $OUT"
$GO run "$BENCHSTAT" "$OUT"
echo
echo "== engine against the seed's loop (medians of $COUNT runs)"
$GO run ./hack/bench/ratios "$OUT"
echo
if grep -q '^# skipped:' "$OUT"; then
	echo "== skipped"
	grep '^# skipped:' "$OUT" | sed 's/^# skipped: //'
else
	echo "== every benchmark ran"
fi
