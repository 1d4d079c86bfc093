#!/usr/bin/env bash
# The fault matrix, process faults, on the local cluster with the fake
# engine, router and client:
#   1. the step's slurmstepd is SIGKILLed while a dep4 step runs: ix-stepd
#      kills the client and stops the servers; the dead step's leases stay in
#      the table until the next step reclaims them without a port collision;
#   2. slurmd is restarted while a step runs: the step finishes normally;
#   3. the lease table holds leases of another boot (a live pid and its real
#      start time, but another boot id): the next step drops them, no error;
#   4. 32 steps at once in one allocation: all succeed, no port twice, the
#      lease lock's deadline never hit.
# After every case: no process of the step (lib.sh's check_clean), no port
# of the plugin's range listening, no lease left, and the next step works.
# Needs what the CTest fixture exports (SLURM_CONF, IX_CLUSTER_DIR,
# IX_FAKES_BIN_DIR, IXCTL, IX_SOURCE_DIR; IX_SPANK_ARGS' lease_dir=,
# run_dir=, port_range= are honoured). Restarts slurmd once, through
# scripts/local-cluster.sh restart-slurmd. Exit 0 when every check passed.
# Client scripts are single-quoted on purpose (they expand in the step);
# "check && ok || fail" reports; cleanup runs from the trap.
# shellcheck disable=SC2016,SC2015,SC2317
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
ix_require_env SLURM_CONF IX_CLUSTER_DIR IX_FAKES_BIN_DIR IXCTL IX_SOURCE_DIR
RECIPE=dsv41flash-fp4-b300-vllm
CLUSTER=$IX_SOURCE_DIR/scripts/local-cluster.sh
JOB_NAME=ix-fault-process
T0=$SECONDS
tmp=$(mktemp -d /tmp/ix-fault-process.XXXXXX)
cleanup() {
  scancel --name="$JOB_NAME" >/dev/null 2>&1 || true
  local j
  for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# step RES ARM CLIENT [SRUN OPTION...]: srun of one step (result directory
# RES, srun's output in RES/srun.{out,err}); the client is a bash script.
step() {
  local res=$1 arm=$2 client=$3; shift 3
  mkdir -p "$res"
  IX_RESULT_DIR=$res srun --job-name="$JOB_NAME" --gres=gpu:4 "$@" --inferencex-recipe=$RECIPE \
    --inferencex-arm="$arm" --inferencex-conc=64 bash -c "$client" >"$res/srun.out" 2>"$res/srun.err"
}
# The client's first line: the step id and the task's parent (slurmstepd).
STARTED='echo "$SLURM_JOB_ID.$SLURM_STEP_ID $PPID" >"$IX_RESULT_DIR/started"'
FAKE_CLIENT='ix-fake-client --sessions 4 --turns 2 --out "$IX_RESULT_DIR/result.json"'
# wait_file FILE SECS: 0 once FILE is not empty.
wait_file() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if [[ -s $1 ]]; then return 0; fi
    sleep 0.1
  done
  return 1
}
err_of() { head -c 600 "$1/srun.err" | tr '\n' '|'; }
client_passed() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; assert s["failed"] == 0, s' "$1/result.json" 2>&1; }
# owners: the lease owners in the table file, "ID/PID" sorted. The file, not
# `ixctl ports list`: a listing is a transaction, which drops dead owners.
owners() { awk '{print $4 "/" $5}' "$LEASE_DIR/leases" 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# next_step NAME: a dep4 step with the fake client must pass right after a case.
next_step() {
  local res=$tmp/$1-next
  if step "$res" dep4 "$FAKE_CLIENT" && client_passed "$res" >/dev/null; then
    ok "$1: the next step passed"
  else
    fail "$1: the next step failed: $(err_of "$res")"
  fi
  check_clean "$1-next"
}

# ---------------------------------------------------------------- 1. slurmstepd SIGKILLed
res=$tmp/stepd-kill
step "$res" dep4 "$STARTED; while :; do ix-fake-client --sessions 1 --turns 1 --out \"\$IX_RESULT_DIR/r.json\" >/dev/null; sleep 0.2; done" &
srun_pid=$!
if ! wait_file "$res/started" 30; then
  fail "stepd-kill: the client never started: $(err_of "$res")"
else
  read -r id stepd <"$res/started"
  [[ $(cat "/proc/$stepd/comm" 2>/dev/null) == slurmstepd ]] || fail "stepd-kill: the task's parent $stepd is not slurmstepd"
  before=$(owners)
  kill -KILL "$stepd"
  start=$(now_ms)
  for ((i = 0; i < 100; i++)); do
    if [[ -z $(ix_servers) ]]; then break; fi
    sleep 0.1
  done
  ms=$(($(now_ms) - start))
  left=$(ix_servers | tr '\n' ' ')
  if [[ -n $left ]]; then fail "stepd-kill: 10 s after slurmstepd's death still running: $left"; else
    ok "stepd-kill: client, ix-stepd, engine, EngineCores and router gone ${ms} ms after kill -9 of slurmstepd $stepd"; fi
  grep -qs '"process":"slurmstepd"' "$res/failure.json" ||
    fail "stepd-kill: no failure.json naming slurmstepd: $(cat "$res/failure.json" 2>/dev/null)"
  # Nobody released the leases: they stay, owned by the dead slurmstepd,
  # until the next transaction of the broker.
  after=$(owners)
  if [[ $before == "$id/$stepd" && $after == "$before" ]]; then
    ok "stepd-kill: the leases stay in the table, owner $after (a dead process)"
  else
    fail "stepd-kill: leases before the kill '$before', after '$after' (want $id/$stepd both)"
  fi
  state=$(scontrol show job "${id%.*}" 2>/dev/null | grep -o 'JobState=[A-Z]*' || true)
  if kill -0 "$srun_pid" 2>/dev/null; then
    echo "     stepd-kill: srun still waits and the job is ${state#JobState=}; scancel ends it"
  fi
  # No exit hook ran: the step's run directory stays until the next step.
  [[ -d $RUN_DIR/$id ]] || fail "stepd-kill: $RUN_DIR/$id is gone before any other step ran"
  scancel "${id%.*}" || true
fi
rc=0
if ! timeout 20 tail --pid="$srun_pid" -f /dev/null; then
  fail "stepd-kill: srun did not end within 20 s of scancel"
  kill "$srun_pid" 2>/dev/null || true
fi
wait "$srun_pid" || rc=$?
echo "     stepd-kill: srun exit $rc"
# The next step reclaims the dead owner's leases (its ports are free now).
res=$tmp/stepd-kill-next
if step "$res" dep4 "$STARTED; \"\$IXCTL\" ports list --json --lease-dir \"$LEASE_DIR\" >\"\$IX_RESULT_DIR/leases.json\"; $FAKE_CLIENT"; then
  python3 - "$res" "${id:-none}" <<'PY' && ok "stepd-kill: the next step reclaimed the dead step's leases and passed" || fail "stepd-kill: the next step's leases"
import json, sys
res, dead = sys.argv[1:]
mine = open(res + "/started").read().split()[0]
leases = json.load(open(res + "/leases.json"))["leases"]
assert leases and all(l["owner"] == mine for l in leases), (dead, leases)
ports = [p for l in leases for p in range(l["first"], l["first"] + l["count"])]
assert len(ports) == len(set(ports)), leases
assert json.load(open(res + "/result.json"))["summary"]["failed"] == 0
PY
else
  fail "stepd-kill: the next step failed: $(err_of "$res")"
fi
# ... which removes the dead step's directory (its slurmstepd is gone).
if [[ -n ${id:-} && -e $RUN_DIR/$id ]]; then fail "stepd-kill: the next step left the dead step's $RUN_DIR/$id"; else
  ok "stepd-kill: the next step removed the dead step's run directory"; fi
check_clean stepd-kill

# ---------------------------------------------------------------- 2. slurmd restarted mid-step
res=$tmp/slurmd-restart
step "$res" dep4 "$STARTED; while [ ! -e \"\$IX_RESULT_DIR/go\" ]; do sleep 0.1; done; $FAKE_CLIENT" &
srun_pid=$!
if wait_file "$res/started" 30; then
  if out=$("$CLUSTER" restart-slurmd 2>&1); then echo "     $out"; else fail "slurmd-restart: $out"; fi
  [[ -n $(ix_servers) ]] || fail "slurmd-restart: the step's processes are gone after slurmd's restart"
else
  fail "slurmd-restart: the client never started: $(err_of "$res")"
fi
touch "$res/go"
rc=0
wait "$srun_pid" || rc=$?
if [[ $rc -eq 0 ]] && why=$(client_passed "$res"); then ok "slurmd-restart: the step went on and passed"; else
  fail "slurmd-restart: srun exit $rc: $(err_of "$res") ${why:-}"; fi
check_clean slurmd-restart
next_step slurmd-restart

# ---------------------------------------------------------------- 3. leases of another boot
# Leases on the first ports of the range, owned by live processes (pid 1 and
# this shell, with their real start times) of another boot: dead by the boot
# id alone. Written as the broker writes: under the lock, by rename.
res=$tmp/other-boot
other=$(cat /proc/sys/kernel/random/uuid)
start_of() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat"; }
now=$(date +%s)
mkdir -p "$LEASE_DIR"
flock "$LEASE_DIR/lock" sh -c 'umask 077; cat >"$1/leases.tmp" && mv "$1/leases.tmp" "$1/leases"' sh "$LEASE_DIR" <<EOF
$PORT_LO 1 PORT 77.0 1 $(start_of 1) $other $now
$((PORT_LO + 1)) 2 DP_BLOCK 77.0 1 $(start_of 1) $other $now
$((PORT_LO + 3)) 1 PORT 78.0 $$ $(start_of $$) $other $now
EOF
[[ $(owners) == "77.0/1 78.0/$$" ]] || fail "other-boot: the table as written reads '$(owners)'"
if step "$res" dep4 "$STARTED; \"\$IXCTL\" ports list --json --lease-dir \"$LEASE_DIR\" >\"\$IX_RESULT_DIR/leases.json\"; $FAKE_CLIENT"; then
  python3 - "$res" "$PORT_LO" <<'PY' && ok "other-boot: the next step dropped the other boot's leases ($(cat "$res/ports"))" || fail "other-boot: leases"
import json, sys
res, lo = sys.argv[1], int(sys.argv[2])
leases = json.load(open(res + "/leases.json"))["leases"]
assert not [l for l in leases if l["owner"] in ("77.0", "78.0")], leases
ports = sorted(p for l in leases for p in range(l["first"], l["first"] + l["count"]))
open(res + "/ports", "w").write(" ".join(map(str, ports)))
assert json.load(open(res + "/result.json"))["summary"]["failed"] == 0
PY
  if grep -qi 'error\|warn' "$res/srun.err"; then fail "other-boot: srun's stderr: $(err_of "$res")"; fi
else
  fail "other-boot: the step failed: $(err_of "$res")"
fi
check_clean other-boot
next_step other-boot

# ---------------------------------------------------------------- 4. 32 steps at once
# One allocation of the whole node; 32 tp4 steps (--overlap: they share its
# CPUs and GPUs 0-3) whose clients wait until all have leased and started
# their servers, so that all 32 hold their leases at the same time.
N=32
res=$tmp/many
mkdir -p "$res"
alloc=$(timeout 60 salloc --no-shell --immediate=30 --job-name="$JOB_NAME" --gres=gpu:8 -c 2 2>&1) || true
job=$(grep -o 'Granted job allocation [0-9]*' <<<"$alloc" | grep -o '[0-9]*$' || true)
if [[ -z $job ]]; then
  fail "many: no allocation: $alloc"
else
  start=$(now_ms)
  pids=()
  for ((i = 0; i < N; i++)); do
    IX_RESULT_DIR=$res/$i
    mkdir -p "$IX_RESULT_DIR"
    IX_RESULT_DIR=$IX_RESULT_DIR srun --jobid="$job" --overlap -n1 --gres=gpu:4 --inferencex-recipe=$RECIPE \
      --inferencex-arm=tp4 --inferencex-conc=8 \
      bash -c "$STARTED; for ((t = 0; t < 1200; t++)); do [ -e $res/go ] && break; sleep 0.1; done; $FAKE_CLIENT" \
      >"$res/$i/srun.out" 2>"$res/$i/srun.err" &
    pids+=($!)
  done
  for ((t = 0; t < 1200; t++)); do
    n=$(find "$res" -name started -size +0 | wc -l)
    if [[ $n -eq $N ]]; then break; fi
    running=0
    for p in "${pids[@]}"; do if kill -0 "$p" 2>/dev/null; then running=$((running + 1)); fi; done
    if [[ $running -lt $((N - n)) ]]; then break; fi  # some step ended before its client started
    sleep 0.1
  done
  ready_ms=$(($(now_ms) - start))
  ix_leases >"$res/leases.json"
  touch "$res/go"
  failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
  python3 - "$res" "$N" "$failed" "$PORT_LO" "$PORT_HI" <<'PY' && ok "many: $N steps at once passed, all ready after $ready_ms ms, $N distinct ports" || fail "many: see above"
import json, os, sys
res, n, failed, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
errs = {i: open(f"{res}/{i}/srun.err").read() for i in range(n)}
bad = {i: e[:300] for i, e in errs.items() if e.strip() or not os.path.exists(f"{res}/{i}/result.json")}
assert failed == 0 and not bad, (failed, bad)
assert not [i for i, e in errs.items() if "cannot lock" in e], "the lease lock's deadline was hit"
for i in range(n):
    s = json.load(open(f"{res}/{i}/result.json"))["summary"]
    assert s["failed"] == 0, (i, s)
# All N steps held their leases at once, on N different ports of the range.
leases = json.load(open(res + "/leases.json"))["leases"]
owners = {l["owner"] for l in leases}
ports = [p for l in leases for p in range(l["first"], l["first"] + l["count"])]
assert len(owners) == n, ("owners while all were up", sorted(owners))
assert len(ports) == len(set(ports)) == n, sorted(ports)
assert all(lo <= p <= hi for p in ports), ports
PY
  scancel "$job" || true
fi
check_clean many
next_step many

echo "fault_process: $((SECONDS - T0)) s"
ix_finish fault_process
