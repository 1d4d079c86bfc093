#!/usr/bin/env bash
# run.sh [SECONDS] [BUILD_DIR] [TARGET...]: builds the libFuzzer targets
# with clang in BUILD_DIR (default <repo>/build-fuzz) and runs each target
# (default: every fuzz/*_fuzz.cc) for SECONDS (default 12), two at a time,
# over a scratch copy of its seed corpus (fuzz/corpus/TARGET/, plus the
# InferenceX configs for matrix_config_fuzz), with its dictionary
# (fuzz/dict/TARGET.dict) when there is one. Nothing is written into the
# repository: corpora, logs and crash inputs stay under BUILD_DIR/fuzz/runs/.
# Prints one line per target with its executed units; exit 0 when no target
# found anything (crashes inside the system's hwloc aside: see hwloc_crash),
# else 1 after the target, its crash input and its log tail.
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
# A tree already configured with IX_FUZZ=ON is used as it is (scripts/test.sh
# builds its sanitizer tree with the fuzz targets in it: one clang build for
# both); any other is configured for fuzzing alone.
configure=(cmake -S "$repo" -B "$build" -DIX_FUZZ=ON -DIX_WERROR=ON -DIX_BUILD_TESTS=OFF -DCMAKE_CXX_COMPILER=clang++
           -DCMAKE_BUILD_TYPE=RelWithDebInfo)
if grep -qx 'IX_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then configure=(true); fi
if ! { "${configure[@]}" &&
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
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$repo/tests/ubsan.supp
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

# hwloc_crash LOG: whether the crash in LOG is inside the system's hwloc,
# whose XML importer crashes or fails an assert on some malformed files: its
# innermost frame that is hwloc's or the project's (below the sanitizer's,
# libFuzzer's and libc's own) is in libhwloc.so. Not the project's to fix
# (docs/FUZZING.md), so it does not fail the run.
hwloc_crash() {
  grep -m1 -E '^ +#[0-9]+ .*(libhwloc\.so| in ix::| in ixfuzz::|LLVMFuzzerTestOneInput)' "$1" |
    grep -q 'libhwloc\.so'
}

# fuzz TARGET: runs TARGET in $runs/TARGET for $secs; a run stopped by a
# crash inside hwloc goes on (its input is kept in hwloc/). The exit status
# is the fuzzer's; the units of each run go to units.
fuzz() {
  local t=$1 dir=$runs/$1 end=$((SECONDS + secs)) rc
  seed "$t" "$dir/corpus"
  mkdir -p "$dir/artifacts" "$dir/hwloc"
  local dict=()
  if [[ -f $repo/fuzz/dict/$t.dict ]]; then dict=(-dict="$repo/fuzz/dict/$t.dict"); fi
  while :; do
    rc=0
    "$build/fuzz/$t" -max_total_time="$((end > SECONDS ? end - SECONDS : 1))" -max_len=65536 -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
      >"$dir/log" 2>&1 || rc=$?
    grep -E '^stat::number_of_executed_units' "$dir/log" | awk '{print $2}' >>"$dir/units"
    if ((rc == 0)) || ! hwloc_crash "$dir/log"; then return "$rc"; fi
    mv "$dir"/artifacts/* "$dir/hwloc/"
    if ((SECONDS >= end)); then return 0; fi
  done
}

# report TARGET STATUS: the summary line, or what it found.
report() {
  local t=$1 rc=$2 dir=$runs/$1 hwloc
  if ((rc == 0)); then
    hwloc=$(find "$dir/hwloc" -type f | wc -l)
    printf '%-22s %s units%s\n' "$t" "$(awk '{n += $1} END {print n + 0}' "$dir/units")" \
      "$(if ((hwloc)); then echo "; $hwloc crash(es) inside the system hwloc, inputs kept in $dir/hwloc"; fi)"
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
