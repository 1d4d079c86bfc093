#!/usr/bin/env bash
# A hung entry in a sweep (docs/SWEEP.md, --hang-after): under
# full-sweep-fail-fast with --hang-after 3, the expert-parallel entries'
# engines stop making tokens 0.2 s after readiness with requests in flight.
# The hung entry fails with reason "hang: ..." (ix-stepd's failure.json), the
# rest of its bucket is cancelled, the sweep exits non-zero, nothing is left
# in the queue, and `ixsubmit report` shows the reason and links the
# diagnosis files. Needs the CTest cluster fixture, SLURM_CONF,
# IX_FAKES_BIN_DIR, IXSUBMIT, IX_SOURCE_DIR.
set -uo pipefail
export PATH=$IX_FAKES_BIN_DIR:$PATH
# KEEP=1 keeps the temporary directory (the sweep, its results and report) to look at.
tmp=$(mktemp -d /tmp/ix-sweep-hang.XXXXXX); trap '[[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
export FAKE_VLLM_RECORD_DIR=$tmp
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ix_require_env SLURM_CONF IX_FAKES_BIN_DIR IXSUBMIT IX_SOURCE_DIR
cfg=$IX_SOURCE_DIR/recipes/examples/dsv41flash-b300-1k1k.yaml
key=dsv41flash-fp4-b300-vllm
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

start=$(now_ms)
FAKE_VLLM_STALL_AFTER_S=0.2 FAKE_VLLM_FAULT_ONLY_IF_ARG=--enable-expert-parallel \
  "$IXSUBMIT" sweep full-sweep-fail-fast --config-files "$cfg" --config-keys "$key" --db "$tmp/ix.db" \
  --throttle 2 --no-container --conc 2 8 --hang-after 3 --sweep-dir "$tmp/sw" -- \
  ix-fake-client --sessions 8 --turns 100 >"$tmp/sw.out" 2>&1 && fail "a sweep with a hung entry exited 0"
echo "ok: the sweep ended (status non-zero) after $(($(now_ms) - start)) ms: $(tail -1 "$tmp/sw.out")"

id=$(grep -o 'sw-[0-9-]*[0-9a-f]*' "$tmp/sw.out" | head -1)
"$IXSUBMIT" results "$id" --db "$tmp/ix.db" --format json -o "$tmp/entries.json" 2>"$tmp/results.err" ||
  fail "ixsubmit results: $(cat "$tmp/results.err")"
python3 - "$tmp/entries.json" <<'PY' || fail "entries: $(cat "$tmp/entries.json")"
import json, sys
entries = json.load(open(sys.argv[1]))
failed = [e for e in entries if e["state"] == "failed"]
cancelled = [e for e in entries if e["state"] == "cancelled"]
assert failed, "no entry failed"
for e in failed:
    assert e["failure_reason"].startswith("hang: engine"), e
assert cancelled, "fail-fast cancelled nothing"
print("  failed:", [(e["arm"], e["conc"]) for e in failed], "cancelled:", [(e["arm"], e["conc"]) for e in cancelled])
PY
# The failed entries' result directories (a cancelled one may have started).
for i in $(json "$tmp/entries.json" '" ".join(str(i) for i, e in enumerate(d) if e["state"] == "failed")'); do
  d=$tmp/sw/results/$i
  [[ $(json "$d/failure.json" 'd.get("cause")') == hang && -s $d/diagnosis-engine.txt ]] ||
    fail "$d: failure.json or diagnosis: $(head -c 300 "$d/failure.json")"
done
[[ -z $(squeue -h -u "$(id -un)" --states=PENDING,RUNNING,SUSPENDED) ]] || fail "jobs left: $(squeue -h)"
echo "ok: the hung entry failed with reason hang, its bucket cancelled"

"$IXSUBMIT" report "$id" --db "$tmp/ix.db" -o "$tmp/report.html" 2>"$tmp/report.err" ||
  fail "ixsubmit report: $(cat "$tmp/report.err")"
grep -q 'hang: engine' "$tmp/report.html" || fail "the report does not show the hang"
grep -q 'href="[^"]*diagnosis-engine.txt"' "$tmp/report.html" || fail "the report links no diagnosis file"
grep -q 'ix-state-cancelled' "$tmp/report.html" || fail "the report shows no cancelled entry"
echo "ok: the report shows the hang, links its diagnosis files and the cancelled entries"

ix_finish "${0##*/}"
