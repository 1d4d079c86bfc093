#!/usr/bin/env bash
# check_output.sh EXPECTED CMD...: runs CMD and passes when it exits 0 and
# its stdout equals EXPECTED byte for byte (the InferenceX reference outputs
# are single 800 KB lines, so on a difference this prints the first
# differing byte offset and the text around it, not a diff).
# IX_UPDATE_GOLDEN=1 rewrites EXPECTED instead (for tests/matrix/golden only).
set -uo pipefail
expected=$1; shift
if [[ ${IX_UPDATE_GOLDEN:-0} == 1 && $expected == */tests/matrix/golden/* ]]; then
  "$@" >"$expected" && echo "updated $expected"; exit $?
fi
[[ -f $expected ]] || { echo "reference file missing: $expected (are the InferenceX fixtures in tests/fixtures/inferencex?)"; exit 1; }
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$@" >"$out" || { echo "command failed (exit $?): $*"; exit 1; }
if ! cmp -s "$expected" "$out"; then
  at=$(cmp "$expected" "$out" 2>&1 | grep -oE 'byte [0-9]+' | grep -oE '[0-9]+' || echo 1)
  from=$(( at > 120 ? at - 120 : 1 ))
  echo "output differs from $expected at byte ${at:-EOF} (sizes $(stat -c %s "$expected") vs $(stat -c %s "$out"))"
  echo "expected: ...$(tail -c +"$from" "$expected" | head -c 240)"
  echo "got:      ...$(tail -c +"$from" "$out" | head -c 240)"
  exit 1
fi
echo "identical to $expected ($(stat -c %s "$out") bytes)"
