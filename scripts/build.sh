#!/usr/bin/env bash
# build.sh [BUILD_DIR] [CMAKE_ARGS...]: configures (once) and builds the
# project with warnings as errors (IX_WERROR); quiet unless something fails.
# Default BUILD_DIR: <repo>/build. IX_BUILD_TARGETS (space-separated)
# builds only those targets and what they need.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build}; shift || true
targets=()
for t in ${IX_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
log=$(mktemp /tmp/ix-build.XXXXXX.log)
if ! { cmake -S "$repo" -B "$build" -DIX_WERROR=ON "$@" && cmake --build "$build" -j "$(nproc)" "${targets[@]}"; } >"$log" 2>&1; then
  grep -E 'error|Error' -A5 "$log" | head -60 >&2 || true
  tail -n 20 "$log" >&2
  echo "build.sh: build failed (full log: $log)" >&2
  exit 1
fi
rm -f "$log"
