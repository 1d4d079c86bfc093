#!/usr/bin/env bash
# Smoke test of the local Slurm cluster (scripts/local-cluster.sh).
#
# Assumes the cluster is already started and SLURM_CONF is exported (CTest's
# local_cluster fixture does both). Checks: the node is idle with
# gpu:b300:8; a 4-GPU step sees CUDA_VISIBLE_DEVICES=0,1,2,3; a throttled job
# array (%2) runs all four tasks with slurm-%A_%a.out files and never more than
# two at once; 'srun -n1 hostname' prints the host name.
# Exit 0 on success, 1 with a message on failure.
set -euo pipefail

PROG=${0##*/}
fail() { echo "$PROG: FAIL: $*" >&2; exit 1; }
ok() { echo "$PROG: ok: $*"; }

[[ -n ${SLURM_CONF:-} ]] || fail "SLURM_CONF is not set (eval \"\$(scripts/local-cluster.sh env)\")"
[[ -r $SLURM_CONF ]] || fail "SLURM_CONF=$SLURM_CONF is not readable; is the cluster started?"
for t in sinfo scontrol srun sbatch squeue scancel; do
  command -v "$t" >/dev/null || fail "$t not found"
done

NODE=$(hostname -s)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ix-cluster-smoke.XXXXXX")
# The batch tasks run as the submitting user; make the output dir writable.
chmod 0755 "$TMP"
SBATCH_PID=
JOBID=
cleanup() {
  if [[ -n $SBATCH_PID ]]; then kill "$SBATCH_PID" 2>/dev/null || true; fi
  if [[ -n $JOBID ]]; then scancel "$JOBID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# 1. node idle with the fake GPUs (allow a few seconds for a previous test's
#    job to finish).
state=
for ((i = 0; i < 50; i++)); do
  node=$(timeout 10 scontrol show node "$NODE" 2>&1) || fail "scontrol show node $NODE failed: $node"
  state=$(grep -m1 -o 'State=[^ ]*' <<<"$node" || true)
  [[ $state == State=IDLE ]] && break
  sleep 0.2
done
[[ $state == State=IDLE ]] || fail "node $NODE is not idle ($state):"$'\n'"$node"
grep -q 'Gres=gpu:b300:8\b' <<<"$node" || fail "node $NODE does not have Gres=gpu:b300:8:"$'\n'"$node"
ok "node $NODE idle with gpu:b300:8"

# 2. GPU binding of a 4-GPU step.
out=$(timeout 20 srun -n1 --gres=gpu:4 env 2>&1) || fail "srun --gres=gpu:4 env failed:"$'\n'"$out"
cvd=$(grep '^CUDA_VISIBLE_DEVICES=' <<<"$out" || true)
[[ $cvd == CUDA_VISIBLE_DEVICES=0,1,2,3 ]] \
  || fail "srun --gres=gpu:4: expected CUDA_VISIBLE_DEVICES=0,1,2,3, got '${cvd:-<unset>}'"
ok "srun --gres=gpu:4 gives $cvd"

# 3. throttled job array. (The node has only two cores, so "at most two at
# once" alone would not prove the throttle; ArrayTaskThrottle=2 does.)
# shellcheck disable=SC2016  # expanded by the batch shell
sbatch --wait --parsable --array=0-3%2 --chdir="$TMP" \
  --output="$TMP/slurm-%A_%a.out" --job-name=ix-smoke-array \
  --wrap 'sleep 1; echo "task=$SLURM_ARRAY_TASK_ID job=$SLURM_ARRAY_JOB_ID"' \
  >"$TMP/sbatch.out" 2>"$TMP/sbatch.err" &
SBATCH_PID=$!
for ((i = 0; i < 100; i++)); do
  # The background shell may not have made the file yet: no output then, not an exit (set -e).
  JOBID=$({ head -n 1 "$TMP/sbatch.out" 2>/dev/null || true; } | cut -d';' -f1)
  [[ -n $JOBID ]] && break
  alive=1; kill -0 "$SBATCH_PID" 2>/dev/null || alive=0
  [[ $alive -eq 1 ]] || break
  sleep 0.1
done
[[ $JOBID =~ ^[0-9]+$ ]] || fail "sbatch did not print a job id: $(cat "$TMP/sbatch.out" "$TMP/sbatch.err")"

job=$(timeout 10 scontrol show job "$JOBID" 2>&1) || fail "scontrol show job $JOBID failed: $job"
grep -q 'ArrayTaskThrottle=2\b' <<<"$job" \
  || fail "job $JOBID does not show ArrayTaskThrottle=2:"$'\n'"$job"

max_running=0
limit_seen=no
deadline=$((SECONDS + 25))
while kill -0 "$SBATCH_PID" 2>/dev/null; do
  [[ $SECONDS -lt $deadline ]] || fail "job array $JOBID did not finish within 25 s: $(squeue -j "$JOBID" 2>&1)"
  q=$(squeue -h -r -j "$JOBID" -o '%t %r' 2>/dev/null || true)
  n=$(grep -c '^R ' <<<"$q" || true)
  ((n > max_running)) && max_running=$n
  grep -q 'JobArrayTaskLimit' <<<"$q" && limit_seen=yes
  sleep 0.2
done
rc=0
wait "$SBATCH_PID" || rc=$?
SBATCH_PID=
[[ $rc -eq 0 ]] || fail "sbatch --wait for job $JOBID exited with $rc: $(cat "$TMP/sbatch.err")"
((max_running <= 2)) || fail "job array $JOBID ran $max_running tasks at once despite %2"
for t in 0 1 2 3; do
  f=$TMP/slurm-${JOBID}_$t.out
  [[ -f $f ]] || fail "missing output file $f (have: $(ls "$TMP"))"
  grep -qx "task=$t job=$JOBID" "$f" || fail "unexpected content of $f: $(cat "$f")"
done
ok "sbatch --array=0-3%2 job $JOBID: ArrayTaskThrottle=2, 4 tasks done with slurm-%A_%a.out files, at most $max_running running at once, pending reason JobArrayTaskLimit seen: $limit_seen"

JOBID=

# 4. plain step.
want=$(hostname)
out=$(timeout 20 srun -n1 hostname 2>&1) || fail "srun -n1 hostname failed:"$'\n'"$out"
[[ $out == "$want" ]] || fail "srun -n1 hostname printed '$out', expected '$want'"
ok "srun -n1 hostname prints $out"
