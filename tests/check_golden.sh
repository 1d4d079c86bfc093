#!/usr/bin/env bash
# check_golden.sh GOLDEN CMD...: runs CMD and fails, with a diff, unless its
# stdout equals GOLDEN byte for byte and it exits 0. IX_UPDATE_GOLDEN=1
# rewrites GOLDEN instead (review the diff before committing it).
set -uo pipefail
golden=$1; shift
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$@" >"$out" || { echo "command failed (exit $?): $*"; exit 1; }
if [[ ${IX_UPDATE_GOLDEN:-0} == 1 ]]; then cp "$out" "$golden"; echo "updated $golden"; exit 0; fi
diff -u "$golden" "$out" || { echo "output differs from $golden"; exit 1; }
