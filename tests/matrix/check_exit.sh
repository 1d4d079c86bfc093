#!/usr/bin/env bash
# check_exit.sh CODE PATTERN CMD...: passes when CMD exits with CODE, prints
# nothing on stdout, and its stderr matches the extended regex PATTERN.
set -uo pipefail
code=$1 pattern=$2; shift 2
out=$(mktemp); err=$(mktemp); trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"; rc=$?
[[ $rc -eq $code ]] || { echo "expected exit $code, got $rc: $*"; cat "$err"; exit 1; }
[[ ! -s $out ]] || { echo "expected nothing on stdout, got:"; head -c 400 "$out"; exit 1; }
grep -Eq -- "$pattern" "$err" || { echo "stderr does not match /$pattern/:"; cat "$err"; exit 1; }
echo "exit $rc: $(head -c 400 "$err")"
