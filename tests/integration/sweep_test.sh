#!/usr/bin/env bash
# ixsubmit sweep end to end on the local cluster with the fake engine and
# client: a clean full-sweep-fail-fast, an injected failure that cancels its
# bucket only, a failing canary that leaves nothing pending, bad input that
# submits nothing. Needs the CTest cluster fixture, SLURM_CONF,
# IX_FAKES_BIN_DIR, IXSUBMIT, IX_SOURCE_DIR.
set -uo pipefail
export PATH=$IX_FAKES_BIN_DIR:$PATH
tmp=$(mktemp -d /tmp/ix-sweep-test.XXXXXX); trap 'rm -rf "$tmp"' EXIT
export FAKE_VLLM_RECORD_DIR=$tmp
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cfg=$IX_SOURCE_DIR/recipes/examples/dsv41flash-b300.yaml
key=dsv41flash-fp4-b300-vllm-agentic-dspark
sweep() { "$IXSUBMIT" sweep "$1" --config-files "$cfg" --config-keys "$key" --db "$tmp/ix.db" --throttle 2 "${@:2}"; }
queue_empty() { [[ -z $(squeue -h -u "$(id -un)") ]]; }

# 1. A small clean sweep: the canary first, then the bucket after it.
sweep full-sweep-fail-fast --conc 2 8 --sweep-dir "$tmp/ok" -- ix-fake-client --sessions 2 --turns 2 >"$tmp/ok.out" 2>&1 ||
  fail "clean sweep failed: $(tail -5 "$tmp/ok.out")"
grep -q "submitted bucket:1k1k as job [0-9]* (.*after job" "$tmp/ok.out" || fail "the bucket did not depend on the canary: $(cat "$tmp/ok.out")"
n=$(ls "$tmp"/ok/results/*/result.json 2>/dev/null | wc -l)
[[ $n -eq 6 ]] || fail "clean sweep: $n result files, expected 6 (tp4, tep4, dep4 at conc 2 and 8)"
echo "ok: clean sweep: $(tail -1 "$tmp/ok.out")"

# 2. The expert-parallel entries' API servers exit at start (tep4, dep4): under
#    fail-fast the bucket stops at the first and the exit status is non-zero.
FAKE_VLLM_EXIT0_AFTER_S=0.05 FAKE_VLLM_FAULT_ONLY_IF_ARG=--enable-expert-parallel \
  sweep full-sweep-fail-fast --conc 2 8 --sweep-dir "$tmp/ff" -- ix-fake-client --sessions 2 --turns 50 >"$tmp/ff.out" 2>&1 &&
  fail "fail-fast sweep exited 0"
grep -q "fail-fast" "$tmp/ff.out" || fail "fail-fast: no cancellation: $(tail -5 "$tmp/ff.out")"
"$IXSUBMIT" status --db "$tmp/ix.db" "$(grep -o 'sw-[0-9-]*[0-9a-f]*' "$tmp/ff.out" | head -1)" >"$tmp/ff.status"
grep -q "failed" "$tmp/ff.status" || fail "fail-fast: no failed entry: $(cat "$tmp/ff.status")"
queue_empty || fail "fail-fast: jobs left: $(squeue -h)"
echo "ok: fail-fast: $(tail -1 "$tmp/ff.out")"

# 3. The same fault without fail-fast: every other entry completes.
FAKE_VLLM_EXIT0_AFTER_S=0.05 FAKE_VLLM_FAULT_ONLY_IF_ARG=--enable-expert-parallel \
  sweep full-sweep-enabled --conc 2 8 --sweep-dir "$tmp/nf" -- ix-fake-client --sessions 2 --turns 50 >"$tmp/nf.out" 2>&1 &&
  fail "full-sweep-enabled with a failure exited 0"
grep -q "done 2, failed 4" "$tmp/nf.out" || fail "full-sweep-enabled: $(tail -3 "$tmp/nf.out")"
echo "ok: no fail-fast: $(tail -1 "$tmp/nf.out")"

# 4. A failing canary: its dependents are cancelled explicitly, nothing is left pending.
FAKE_VLLM_NEVER_READY=1 sweep full-sweep-fail-fast --conc 2 8 --sweep-dir "$tmp/cf" -- ix-fake-client >"$tmp/cf.out" 2>&1 &
pid=$!
# never ready: the step's ready timeout would be an hour; fail the canary's step by cancelling it
for _ in $(seq 100); do grep -q "submitted bucket" "$tmp/cf.out" && break; sleep 0.1; done
canary=$(grep -o "submitted canary as job [0-9]*" "$tmp/cf.out" | grep -o "[0-9]*$")
sleep 2; scancel "$canary"
wait $pid && fail "canary failure: sweep exited 0"
grep -q "the canary failed" "$tmp/cf.out" || fail "canary failure: dependents not cancelled: $(tail -5 "$tmp/cf.out")"
sleep 1; queue_empty || fail "canary failure: left in the queue: $(squeue -h)"
echo "ok: failed canary: $(tail -1 "$tmp/cf.out")"

# 5. Bad input: clear errors, nothing submitted.
before=$(squeue -h | wc -l)
out=$("$IXSUBMIT" sweep no-such-mode --config-files "$cfg" -- c 2>&1) && fail "unknown mode accepted"
grep -q "full-sweep-fail-fast" <<<"$out" || fail "unknown mode: $out"
out=$(sweep full-sweep-fail-fast --config-keys nope-* --sweep-dir "$tmp/b1" -- c 2>&1) && fail "unmatched key accepted"
echo "ok: unmatched key: $out"
out=$(sweep full-sweep-fail-fast --sweep-dir "$tmp/b2" --partition nope -- c 2>&1) && fail "bad partition accepted"
grep -q "nothing was submitted" <<<"$out" || fail "bad partition: $out"
echo "ok: bad partition: $(tail -1 <<<"$out")"
out=$(sweep full-sweep-fail-fast --recipe-dir "$tmp" --sweep-dir "$tmp/b3" -- c 2>&1) && fail "no recipe accepted"
grep -q "no recipe in" <<<"$out" || fail "no recipe: $out"
out=$(sweep full-sweep-fail-fast --conc 3 --sweep-dir "$tmp/b4" -- c 2>&1) && fail "dep4 at conc 3 accepted"
grep -q "not whole for CONC=3" <<<"$out" || fail "conc 3: $out"
[[ $(squeue -h | wc -l) -eq $before ]] || fail "bad input submitted jobs"
echo "ok: bad input refused before anything was submitted"

[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
echo "sweep: all checks passed"
