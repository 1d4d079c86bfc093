#!/usr/bin/env bash
# repeat_timing_tests.sh [BUILD_DIR] [RUNS]: runs every unit test that waits,
# times or races (processes, stops, watches, readiness probes, the port
# broker, ix-stepd's launch, the sweep lock, every HTTP server a test talks
# to and what its threads write after answering) RUNS
# times (default 50) in BUILD_DIR (default <repo>/build-asan, an
# -DIX_SANITIZE=ON build), with one busy loop per core so the tests share the
# CPU as they do in CI. Prints a line per binary; exit 0 when nothing failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build-asan}; runs=${2:-50}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:suppressions=$repo/tests/ubsan.supp}
# hwloc's PCI plugin is not loaded: LSan reports what it keeps once hwloc
# unloads it (scripts/test.sh says why).
export HWLOC_PLUGINS_BLACKLIST=${HWLOC_PLUGINS_BLACKLIST:-hwloc_pci}
busy=()
for ((i = 0; i < $(nproc); i++)); do
  (while :; do :; done) &
  busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null' EXIT
status=0
# BINARY FILTER: the binary's tests matching FILTER, RUNS times in one process.
run() {
  local bin=$build/$1 filter=$2 t0=$SECONDS log
  log=$(mktemp /tmp/ix-repeat.XXXXXX.log)
  "$bin" --gtest_filter="$filter" --gtest_repeat="$runs" --gtest_brief=1 >"$log" 2>&1
  local rc=$? failed
  failed=$(grep -c '^\[  FAILED  \]' "$log")
  echo "$1 [$filter]: $("$bin" --gtest_filter="$filter" --gtest_list_tests | grep -c '^  ') tests x $runs," \
    "exit $rc, $failed failed, $((SECONDS - t0)) s"
  if [[ $rc -ne 0 || $failed -ne 0 ]]; then
    status=1
    grep '^\[  FAILED  \]' "$log" | sort | uniq -c
    echo "  (log: $log)"
  else
    rm -f "$log"
  fi
}
run core/process/process_test '*'
run core/node/node_test 'Port*:LoadTopologyXml*'
run spank_plugin/ixspank_test 'StepdLaunch*:StepDirs*'
run submitter/sweep/sweep_test 'SweepDir*'
run tests/fakes/http_server_test '*'
# The node agent's threads and servers (delivery with its backoff, /metrics,
# loopback fetches with deadlines, the hang watch's scrapes), the
# collector's server with its admission gate and work queue (its access log
# is written after the answer, on the server's thread), the sweep's stream
# (an in-process collector fed while the driver watches).
run node_agent/agent_delivery_test 'Delivery*:Spool*:EventSocket*'
run node_agent/agent_metrics_test 'MetricsServer*:LoopbackFetch*:EngineMetrics*:HangWatch*'
run submitter/collector/collector_test 'Collector*:RequestGate*:BoundedWorkQueue*'
run submitter/sweep/sweep_stream_test '*'
exit $status
