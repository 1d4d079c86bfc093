#!/usr/bin/env bash
# Hangs end a step like crashes (docs/STEP.md, "Hangs"): a dep4 step whose
# client keeps requests in flight, with the recipe's hang policy at 3 s
# (--inferencex-hang-after=3), no node agent. One DP rank that stops making
# tokens, and an engine stopped outright (SIGSTOP: alive, answering nothing),
# and a router that stops forwarding each end srun non-zero within
# hang_after + 5 s, failure.json says "hang" with the server (and the rank),
# a diagnosis file for every server process is in the result directory (with
# the engine's faulthandler dump where it registered one on SIGUSR1), and
# nothing is left; an idle engine (no requests for longer than hang_after)
# runs to the step's end.
# Needs: the CTest cluster fixture, SLURM_CONF, IX_FAKES_BIN_DIR, IXCTL.
set -uo pipefail
RECIPE=dsv41flash-fp4-b300-vllm
export PATH=$IX_FAKES_BIN_DIR:$PATH
tmp=$(mktemp -d /tmp/ix-step-hang.XXXXXX); trap 'rm -rf "$tmp"' EXIT
export FAKE_VLLM_RECORD_DIR=$tmp
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ix_require_env SLURM_CONF IX_FAKES_BIN_DIR IXCTL
HANG_AFTER=3

# hang_step NAME CLIENT [ENV...]: a dep4 step with the policy at HANG_AFTER
# s running CLIENT (a bash script); srun's status in $tmp/NAME/rc, its time
# in ms in $tmp/NAME/ms.
hang_step() {
  local name=$1 client=$2; shift 2
  mkdir -p "$tmp/$name"
  local start rc=0
  start=$(date +%s%N)
  env "$@" IX_RESULT_DIR="$tmp/$name" srun --gres=gpu:4 --inferencex-recipe=$RECIPE --inferencex-arm=dep4 \
    --inferencex-conc=64 --inferencex-hang-after=$HANG_AFTER bash -c "$client" \
    >"$tmp/$name/srun.out" 2>"$tmp/$name/srun.err" || rc=$?
  echo "$rc" >"$tmp/$name/rc"
  echo $((($(date +%s%N) - start) / 1000000)) >"$tmp/$name/ms"
}

# expect_hang NAME LIMIT_MS PROCESS RANK: srun failed within LIMIT_MS,
# failure.json names the hang of PROCESS (and RANK: "" for the whole
# engine), diagnoses exist.
expect_hang() {
  local name=$1 limit=$2 process=$3 rank=$4
  [[ $(cat "$tmp/$name/rc") -ne 0 ]] || fail "$name: srun exit 0"
  [[ $(cat "$tmp/$name/ms") -lt $limit ]] || fail "$name: srun took $(cat "$tmp/$name/ms") ms (limit $limit)"
  python3 - "$tmp/$name" "$process" "$rank" <<'PY' || fail "$name: failure.json or the diagnosis: $(cat "$tmp/$name/failure.json" 2>/dev/null)"
import json, os, sys
d, process, rank = sys.argv[1:4]
f = json.load(open(d + "/failure.json"))
assert f["cause"] == "hang" and f["reason"].startswith("hang: "), f
assert f["process"] == process and f["hang"]["process"] == process, f
assert f["hang"]["label_value"] == rank, (f["hang"], rank)
assert sorted(f["diagnosis"]) == ["diagnosis-engine.txt", "diagnosis-router.txt"], f["diagnosis"]
for name in f["diagnosis"]:
    text = open(os.path.join(d, name)).read()
    assert "== process" in text and "state:" in text and "threads" in text, text[:400]
PY
  echo "ok: $name: srun exit $(cat "$tmp/$name/rc") after $(cat "$tmp/$name/ms") ms; $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reason"])' "$tmp/$name/failure.json")"
  check_clean "$name"
}

# Requests in flight on every rank for a minute (each session's turns chain).
BUSY='ix-fake-client --sessions 16 --turns 200 --out "$IX_RESULT_DIR/result.json"'

# 1. DP rank 1 stops making tokens 1 s after readiness (its requests stay
#    running, /metrics answers): hung HANG_AFTER s later. The engine has
#    faulthandler registered on SIGUSR1: its dump is in its diagnosis.
hang_step rank-stall "$BUSY" FAKE_VLLM_STALL_AFTER_S=1 FAKE_VLLM_STALL_RANK=1 FAKE_VLLM_FAULTHANDLER=1
expect_hang rank-stall $(((1 + HANG_AFTER + 5) * 1000 + 3000)) engine 1
grep -q "SIGUSR1 (a faulthandler dump) sent to" "$tmp/rank-stall/diagnosis-engine.txt" &&
  grep -q "most recent call first" "$tmp/rank-stall/diagnosis-engine.txt" ||
  fail "rank-stall: no faulthandler dump in diagnosis-engine.txt: $(grep -n "^==" "$tmp/rank-stall/diagnosis-engine.txt")"
! grep -q "SIGUSR1" "$tmp/rank-stall/diagnosis-router.txt" || fail "rank-stall: the router (no handler) was sent SIGUSR1"

# 2. The engine stopped outright 1 s into the run: it answers neither its
#    health probes nor /metrics while it lives.
hang_step sigstop "$BUSY & sleep 1; pkill -STOP -x vllm; wait"
expect_hang sigstop $(((1 + HANG_AFTER + 5) * 1000 + 3000)) engine ""
pkill -CONT -x vllm 2>/dev/null

# 3. The router stops forwarding 1 s after it listens: requests in flight
#    at the router, none reaching the engines, whose counters stand still.
hang_step router-stall "$BUSY" FAKE_ROUTER_STALL_AFTER_S=1
expect_hang router-stall $(((1 + HANG_AFTER + 5) * 1000 + 3000)) router ""

# 4. Idle for twice hang_after, then done: the step ends by itself, status 0.
hang_step idle "sleep $((2 * HANG_AFTER)); echo done >\"\$IX_RESULT_DIR/done\""
[[ $(cat "$tmp/idle/rc") -eq 0 && -f $tmp/idle/done && ! -f $tmp/idle/failure.json ]] ||
  fail "idle: srun exit $(cat "$tmp/idle/rc"): $(cat "$tmp/idle/srun.err")"
echo "ok: idle: an engine without requests for $((2 * HANG_AFTER)) s is no hang"
check_clean idle

ix_finish "${0##*/}"
