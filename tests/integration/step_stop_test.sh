#!/usr/bin/env bash
# The graceful stop: when the client is done, every engine gets SIGTERM and
# its grace period before anything is killed, ix-stepd writes "finished" and
# sends its end events, and only then does slurmstepd kill what is left of
# the step (in Slurm 22.05 it SIGKILLs the step's processes once every task
# is reaped, before the plugin's `exit` hook). The fake engine takes
# FAKE_VLLM_STOP_DELAY_S to shut down, as real vLLM does while it frees
# GPU memory. One local task (ix-stepd stops at the client's exit) and two
# (it stops at the last task's exit); a shutdown longer than the grace shows
# the test can tell a kill from a clean stop.
# Restarts the cluster with agent_socket= (to read the events) and restores
# the plugstack.conf it found. Needs what step_test.sh needs, plus
# IX_CLUSTER_DIR and IX_SOURCE_DIR.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ix_require_env IX_CLUSTER_DIR IX_SOURCE_DIR IX_FAKES_BIN_DIR IXCTL SLURM_CONF
CLUSTER=$IX_SOURCE_DIR/scripts/local-cluster.sh
tmp=$(mktemp -d /tmp/ix-stop-test.XXXXXX)
ORIG_ARGS=${IX_SPANK_ARGS-}
receiver=
cleanup() {
  [[ -n $receiver ]] && kill "$receiver" 2>/dev/null
  IX_SPANK_ARGS=$ORIG_ARGS "$CLUSTER" restart >"$tmp/restore.log" 2>&1 ||
    { echo "FAIL: could not restore the cluster:"; cat "$tmp/restore.log"; }
  rm -rf "$tmp"
}
trap cleanup EXIT

# The node agent's socket, read by a stand-in that writes one event a line.
sock=$tmp/agent.sock
python3 -u - "$sock" >"$tmp/events" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
while True:
    print(s.recv(65536).decode(), flush=True)
PY
receiver=$!
for _ in $(seq 50); do [[ -S $sock ]] && break; sleep 0.1; done
if ! IX_SPANK_ARGS="$ORIG_ARGS agent_socket=$sock" "$CLUSTER" restart >"$tmp/restart.log" 2>&1; then
  echo "FAIL: cluster restart failed:"; cat "$tmp/restart.log"; exit 1
fi

# stop_case NAME TASKS STOP_DELAY_S: a tp4 step whose engine takes
# STOP_DELAY_S to shut down; task 0 runs the client.
stop_case() {
  local name=$1 tasks=$2 delay=$3 dir=$tmp/$1
  mkdir -p "$dir"
  IX_RESULT_DIR=$dir FAKE_VLLM_RECORD_DIR=$dir FAKE_VLLM_STOP_DELAY_S=$delay \
    srun -n "$tasks" --gres=gpu:4 --inferencex-recipe=dsv41flash-fp4-b300-vllm --inferencex-arm=tp4 \
    --inferencex-conc=8 bash -c '[[ $SLURM_PROCID != 0 ]] || ix-fake-client --sessions 2 --turns 2 --out "$IX_RESULT_DIR/result.json"' \
    >"$dir/srun.out" 2>"$dir/srun.err" || fail "$name: srun failed: $(cat "$dir/srun.err")"
  sleep 0.3  # the last datagrams
}

# check_events NAME STEP: started, ready, finished for STEP, in that order,
# and no backstop.
check_events() {
  python3 - "$tmp/events" "$2" <<'PY' || fail "$1: events"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [e["event"] for e in events if e["step"] == sys.argv[2]]
assert "backstop" not in mine, mine
for first, then in (("started", "ready"), ("ready", "finished")):
    assert first in mine and then in mine and mine.index(first) < mine.index(then), mine
PY
}

step_of() { sed -n 's/.*"step":"\([0-9.]*\)".*/\1/p' "$tmp/events" | tail -n 1; }

for point in "one-task 1" "two-tasks 2"; do
  read -r name tasks <<<"$point"
  stop_case "$name" "$tasks" 1.5
  log=$tmp/$name/server.log
  grep -q 'received Terminated' "$log" || fail "$name: the engine got no SIGTERM: $(tail -n 3 "$log")"
  grep -q 'releasing resources' "$log" || fail "$name: the engine's shutdown did not run: $(tail -n 3 "$log")"
  grep -q 'shutdown complete, exiting with status 0' "$log" ||
    fail "$name: the engine was killed before its shutdown ended: $(tail -n 3 "$log")"
  check_events "$name" "$(step_of)"
  check_clean "$name"
done

# A shutdown longer than ix-stepd's grace (3 s) is cut short by SIGKILL.
stop_case slow-stop 1 8
log=$tmp/slow-stop/server.log
grep -q 'releasing resources' "$log" || fail "slow-stop: the engine's shutdown did not start"
if grep -q 'shutdown complete' "$log"; then fail "slow-stop: an 8 s shutdown ended within the 3 s grace"; fi
check_events slow-stop "$(step_of)"
check_clean slow-stop
ix_finish step_stop
