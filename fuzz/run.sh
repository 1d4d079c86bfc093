#!/usr/bin/env bash
# run.sh [SECONDS] [BUILD_DIR] [TARGET...]: builds the libFuzzer targets
# with clang in BUILD_DIR (default <repo>/build-fuzz) and runs each target
# (default: every fuzz/*_fuzz.cc) for SECONDS (default 12), two at a time,
# over a scratch copy of its seed corpus (fuzz/corpus/TARGET/, plus the
# InferenceX configs for matrix_config_fuzz), with its dictionary
# (fuzz/dict/TARGET.dict) when there is one. Nothing is written into the
# repository: corpora, logs and crash inputs stay under BUILD_DIR/fuzz/runs/.
# Prints one line per target with its executed units; exit 0 when no target
# found anything, else 1 after the target, its crash input and its log tail.
# docs/FUZZING.md.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
secs=${1:-12}
build=${2:-$repo/build-fuzz}
shift $(($# < 2 ? $# : 2))
if (($#)); then
  targets=("$@")
else
  targets=()
  for f in "$repo"/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" .cc)"); done
fi

log=$(mktemp /tmp/ix-fuzz-build.XXXXXX.log)
if ! { cmake -S "$repo" -B "$build" -DIX_FUZZ=ON -DIX_BUILD_TESTS=OFF -DCMAKE_CXX_COMPILER=clang++ \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "fuzz/run.sh: build failed (full log: $log)" >&2
  exit 1
fi
rm -f "$log"

runs=$build/fuzz/runs
rm -rf "$runs"
mkdir -p "$runs"
# RapidJSON's and hwloc's own findings are suppressed (the files say which);
# any other UB stops the run.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$repo/fuzz/ubsan.supp
export LSAN_OPTIONS=suppressions=$repo/fuzz/lsan.supp:print_suppressions=0

# seed TARGET DIR: the seed corpus of TARGET copied into DIR.
seed() {
  local t=$1 dir=$2
  mkdir -p "$dir"
  if [[ -d $repo/fuzz/corpus/$t ]]; then cp "$repo/fuzz/corpus/$t"/* "$dir/"; fi
  if [[ $t == matrix_config_fuzz ]]; then matrix_seeds "$dir"; fi
}

# matrix_seeds DIR: every config key of the InferenceX fixture's
# nvidia-master.yaml as its own small document, runners.yaml, the test data.
matrix_seeds() {
  local dir=$1 fixtures=$repo/tests/fixtures/inferencex
  if [[ -f $fixtures/nvidia-master.yaml ]]; then
    # One seed per top-level key (a key line starts in column 1).
    awk -v dir="$dir" '/^[A-Za-z0-9][^:]*:[[:space:]]*$/ { n++ } n { print > (dir "/key-" n ".yaml") }' \
      "$fixtures/nvidia-master.yaml"
    cp "$fixtures/runners.yaml" "$dir/runners.yaml"
  else
    echo "fuzz/run.sh: no InferenceX fixtures at $fixtures; seeding matrix_config_fuzz from tests/matrix/data only" >&2
  fi
  cp "$repo"/tests/matrix/data/*.yaml "$dir/"
}

# fuzz TARGET: one run in $runs/TARGET; its exit status is the fuzzer's.
fuzz() {
  local t=$1 dir=$runs/$1
  seed "$t" "$dir/corpus"
  mkdir -p "$dir/artifacts"
  local dict=()
  if [[ -f $repo/fuzz/dict/$t.dict ]]; then dict=(-dict="$repo/fuzz/dict/$t.dict"); fi
  "$build/fuzz/$t" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1
}

# units TARGET: "N units" from its log.
units() { grep -E '^stat::number_of_executed_units' "$runs/$1/log" | awk '{print $2 " units"}'; }

# report TARGET STATUS: the summary line, or what it found. A crash inside
# the system's hwloc (its XML importer crashes or fails an assert on some
# malformed files) is reported with its input but is not the project's to
# fix, so it does not fail the run (docs/FUZZING.md).
report() {
  local t=$1 rc=$2 dir=$runs/$1
  if ((rc == 0)); then
    printf '%-22s %s\n' "$t" "$(units "$t")"
    return 0
  fi
  # The innermost frame that is hwloc's or the project's (below the
  # sanitizer's, libFuzzer's and libc's own: a signal, an assert).
  if grep -m1 -E '^ +#[0-9]+ .*(libhwloc\.so| in ix::| in ixfuzz::|LLVMFuzzerTestOneInput)' "$dir/log" |
    grep -q 'libhwloc\.so'; then
    printf '%-22s %s; stopped by a crash inside the system hwloc, input kept: %s\n' "$t" "$(units "$t")" \
      "$(ls "$dir"/artifacts/* | head -n 1)"
    return 0
  fi
  echo "fuzz/run.sh: $t found a problem (exit $rc); input: $(ls "$dir"/artifacts/* 2>/dev/null | head -n 1)" >&2
  tail -n 60 "$dir/log" >&2
  echo "fuzz/run.sh: $t: full log $dir/log" >&2
  return 1
}

# Two at a time: a pair of runs, then their reports in order.
status=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for t in "${targets[@]:i:2}"; do
    fuzz "$t" &
    pids+=($!)
  done
  j=0
  for t in "${targets[@]:i:2}"; do
    rc=0
    wait "${pids[j]}" || rc=$?
    report "$t" "$rc" || status=1
    j=$((j + 1))
  done
done
exit $status
