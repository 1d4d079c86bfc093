#!/usr/bin/env bash
# step_bench.sh BUILD_DIR [RUNS]: job-step timings on a private local cluster
# (its own directory and ports), each against a baseline in the same run:
#  - set-up overhead: `srun --inferencex-... true` with an instantly ready
#    fake engine, against plain `srun true`;
#  - ready to client: from ix-stepd's "ready" (the state file) to the
#    client's first instruction;
#  - crash to exit: from an EngineCore's crash (fault switch) to srun's exit.
# Prints Markdown. Medians over RUNS (default 15).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build}; runs=${2:-15}
export IX_CLUSTER_DIR=/tmp/ix-step-bench IX_SLURMCTLD_PORT=17917 IX_SLURMD_PORT=17918
export IX_SPANK_PLUGIN=$build/spank_plugin/spank_inferencex.so IX_RECIPE_DIR=$repo/recipes
export IX_SPANK_ARGS="topology=$repo/tests/fixtures/topology/hgx-b300-4tib.xml memlock=keep"
"$repo/scripts/local-cluster.sh" restart >/dev/null
trap '"$repo/scripts/local-cluster.sh" stop >/dev/null' EXIT
eval "$("$repo/scripts/local-cluster.sh" env)"
export PATH=$build/tests/fakes/bin:$PATH FAKE_VLLM_START_DELAY_S=0
tmp=$(mktemp -d); export FAKE_VLLM_RECORD_DIR=$tmp
opts=(--gres=gpu:4 --inferencex-recipe=dsv41flash-fp4-b300-vllm --inferencex-arm=tp4 --inferencex-conc=8)
now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

srun true; srun "${opts[@]}" true  # warm up
: >"$tmp/base"; : >"$tmp/ix"; : >"$tmp/ready"; : >"$tmp/crash"
for _ in $(seq "$runs"); do
  t=$(now_ms); srun true; echo $(($(now_ms) - t)) >>"$tmp/base"
  t=$(now_ms); srun "${opts[@]}" true; echo $(($(now_ms) - t)) >>"$tmp/ix"
  srun "${opts[@]}" bash -c 'c=$(date +%s%N); r=$(stat -c %.9Y "$IX_RUN_DIR/state" | tr -d .); echo $(((c - r) / 1000))' >>"$tmp/ready"
  # The crash time is the EngineCore's own log line (ms, UTC).
  IX_RESULT_DIR=$tmp FAKE_VLLM_CRASH_ENGINE_AFTER_S=0.3 srun "${opts[@]}" sleep 30 2>/dev/null || true
  end=$(now_ms)
  crashed=$(grep -m1 'EngineCore encountered a fatal error' "$tmp/server.log" | cut -d' ' -f1)
  echo $((end - $(date -d "$crashed" +%s%3N))) >>"$tmp/crash"
  rm -f "$tmp/server.log"
done
base=$(median <"$tmp/base"); ix=$(median <"$tmp/ix"); ready=$(median <"$tmp/ready"); crash=$(median <"$tmp/crash")
echo "| measure (median of $runs) | value | baseline in the same run | difference or ratio |"
echo "| --- | --- | --- | --- |"
echo "| srun with a tp4 step on the instant fake engine | $ix ms | plain srun true: $base ms | +$((ix - base)) ms |"
echo "| engine ready to client start | $ready us | | |"
echo "| EngineCore crash to srun exit | $crash ms | | |"
rm -rf "$tmp"
