#!/usr/bin/env bash
# run.sh [SECONDS] [BUILD_DIR]: builds the libFuzzer targets with clang in
# BUILD_DIR (default <repo>/build-fuzz) and runs matrix_config_fuzz for
# SECONDS (default 25) over a seed corpus: every config key of the InferenceX
# fixture's nvidia-master.yaml as its own small document, plus runners.yaml
# and the test data. Exit 0 when the fuzzer found nothing; a crash leaves
# its input in BUILD_DIR/fuzz/artifacts/.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
secs=${1:-25}
build=${2:-$repo/build-fuzz}
fixtures=$repo/tests/fixtures/inferencex
log=$(mktemp /tmp/ix-fuzz-build.XXXXXX.log)
if ! { cmake -S "$repo" -B "$build" -DIX_FUZZ=ON -DIX_BUILD_TESTS=OFF -DCMAKE_CXX_COMPILER=clang++ \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$build" --target matrix_config_fuzz -j "$(nproc)"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "fuzz/run.sh: build failed (full log: $log)" >&2
  exit 1
fi
rm -f "$log"
seeds=$build/fuzz/seeds corpus=$build/fuzz/corpus artifacts=$build/fuzz/artifacts
rm -rf "$seeds"; mkdir -p "$seeds" "$corpus" "$artifacts"
if [[ -f $fixtures/nvidia-master.yaml ]]; then
  # One seed per top-level key (a key line starts in column 1).
  awk -v dir="$seeds" '/^[A-Za-z0-9][^:]*:[[:space:]]*$/ { n++ } n { print > (dir "/key-" n ".yaml") }' \
    "$fixtures/nvidia-master.yaml"
  cp "$fixtures/runners.yaml" "$seeds/runners.yaml"
else
  echo "fuzz/run.sh: no InferenceX fixtures at $fixtures; seeding from tests/matrix/data only" >&2
fi
cp "$repo"/tests/matrix/data/*.yaml "$seeds/"
"$build/fuzz/matrix_config_fuzz" -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds" 2>"$build/fuzz/fuzz.log" || {
  tail -n 60 "$build/fuzz/fuzz.log" >&2
  echo "fuzz/run.sh: matrix_config_fuzz found a problem (inputs in $artifacts)" >&2
  exit 1
}
grep -E '^stat::number_of_executed_units|^Done' "$build/fuzz/fuzz.log" | tr '\n' ' '
echo
