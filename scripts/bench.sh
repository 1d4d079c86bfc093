#!/usr/bin/env bash
# bench.sh [SECONDS_PER_CASE]: builds and runs the benchmarks in bench/ and
# prints their Markdown tables (the source of docs/PERFORMANCE.md). Each
# benchmark measures its own baseline in the same run and reports ratios.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
secs=${1:-3}
"$repo/scripts/build.sh" "$repo/build"
echo "## Port broker (bench/ports_bench.cc, ${secs}s per case, $(nproc) cores)"
echo
"$repo/build/bench/ports_bench" "$secs" /run
echo
echo "## Matrix generator (bench/matrix_bench.cc, $(nproc) cores)"
echo
"$repo/build/bench/matrix_bench" "$repo/build/submitter/ixsubmit" "$repo/tests/fixtures/inferencex" 31
echo
echo "## Job step (bench/step_bench.sh, $(nproc) cores; needs root: starts a private cluster)"
echo
"$repo/bench/step_bench.sh" "$repo/build" 15
echo
echo "## Hang detection (bench/hang_bench.sh, $(nproc) cores; needs root: starts a private cluster)"
echo
"$repo/bench/hang_bench.sh" "$repo/build" 7 2
"$repo/bench/hang_bench.sh" "$repo/build" 5 5
echo
echo "## Sweep submission (bench/sweep_bench.sh, $(nproc) cores; needs root: starts a private cluster)"
echo
"$repo/bench/sweep_bench.sh" "$repo/build" 5
echo
echo "## Collector ingest (bench/collector_bench.cc, $(nproc) cores)"
echo
"$repo/build/bench/collector_bench" "$repo/build/submitter/ixsubmit" 50000 5
echo
echo "## Node agent (bench/agent_bench.sh, $(nproc) cores; needs root: starts a private cluster)"
echo
"$repo/bench/agent_bench.sh" "$repo/build" 30
echo
echo "## GPU sample (bench/gpu_sample_bench.cc): on a machine with an NVIDIA GPU and nvidia-smi"
echo
if command -v nvidia-smi >/dev/null; then "$repo/build/bench/gpu_sample_bench" 50; else echo "(no nvidia-smi here: skipped)"; fi
