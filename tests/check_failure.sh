#!/usr/bin/env bash
# check_failure.sh PATTERN CMD...: passes when CMD exits non-zero, prints
# nothing on stdout, and its stderr matches the extended regex PATTERN.
set -uo pipefail
pattern=$1; shift
out=$(mktemp); err=$(mktemp); trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"; rc=$?
[[ $rc -ne 0 ]] || { echo "expected failure, got exit 0: $*"; cat "$out"; exit 1; }
[[ ! -s $out ]] || { echo "expected nothing on stdout, got:"; cat "$out"; exit 1; }
grep -Eq -- "$pattern" "$err" || { echo "stderr does not match /$pattern/:"; cat "$err"; exit 1; }
echo "exit $rc: $(head -c 400 "$err")"
