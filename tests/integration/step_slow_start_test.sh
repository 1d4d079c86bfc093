#!/usr/bin/env bash
# A model load can take an hour: a fake engine that needs 90 s to become
# ready must not trip any Slurm timeout. task_init blocks the whole time,
# then the client runs and the step succeeds.
set -uo pipefail
export PATH=$IX_FAKES_BIN_DIR:$PATH
tmp=$(mktemp -d /tmp/ix-slow-test.XXXXXX); trap 'rm -rf "$tmp"' EXIT
# The fake engine records its argv where this says, not in the working directory.
export FAKE_VLLM_RECORD_DIR=$tmp
start=$(date +%s)
IX_RESULT_DIR=$tmp FAKE_VLLM_START_DELAY_S=${IX_SLOW_START_S:-90} \
  srun --gres=gpu:4 --inferencex-recipe=dsv41flash-fp4-b300-vllm --inferencex-arm=tp4 --inferencex-conc=8 \
  bash -c 'ix-fake-client --sessions 2 --turns 2 --out "$IX_RESULT_DIR/result.json"' >"$tmp/out" 2>"$tmp/err"
rc=$?
took=$(($(date +%s) - start))
if [[ $rc -ne 0 ]]; then echo "FAIL: srun exit $rc after ${took}s"; cat "$tmp/err"; exit 1; fi
if [[ $took -lt ${IX_SLOW_START_S:-90} ]]; then echo "FAIL: the step did not wait for the engine (${took}s)"; exit 1; fi
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; assert s["failed"] == 0, s' "$tmp/result.json" || exit 1
echo "step_slow_start: a ${IX_SLOW_START_S:-90} s engine start passed; step took ${took}s"
