#!/usr/bin/env bash
# step_bench.sh BUILD_DIR [RUNS]: job-step timings on a private local cluster
# (its own directory and ports), each against a baseline in the same run:
#  - set-up overhead: `srun --inferencex-... true` with an instantly ready
#    fake engine, against plain `srun true` (and, to tell Slurm's GRES work
#    from the plugin's, `srun --gres=gpu:4 true`);
#  - ready to client: from the engine's "Starting vLLM API server" log line
#    (it listens right after; ms resolution) to the client's first
#    instruction, so the readiness probes' lag is included;
#  - crash to exit: from an EngineCore's crash (fault switch) to srun's exit.
# The plugin's lease and run directories are on tmpfs (/dev/shm), as their
# defaults under /run are on a node; this VM's /run is ext4, where every
# lease transaction would pay a disk fsync that no node pays.
# Prints Markdown. Medians over RUNS (default 15).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build}; runs=${2:-15}
. "$repo/bench/cluster.sh"
shm=/dev/shm/ix-step-bench
rm -rf "$shm"; mkdir -m 0755 -p "$shm"
trap 'bench_cluster_stop; rm -rf "$shm"' EXIT
bench_cluster step-bench 17917 lease_dir=$shm/ports run_dir=$shm/steps
tmp=$(mktemp -d); export FAKE_VLLM_RECORD_DIR=$tmp
cd "$tmp"  # steps without IX_RESULT_DIR write their result directory here
opts=(--gres=gpu:4 --inferencex-recipe=dsv41flash-fp4-b300-vllm --inferencex-arm=tp4 --inferencex-conc=8)
# Times in us from bash's EPOCHREALTIME: no fork, where `date` adds ~1 ms.
ms() { awk -v us="$1" 'BEGIN {printf "%.1f", us / 1000}'; }

srun true; srun "${opts[@]}" true  # warm up
: >"$tmp/base"; : >"$tmp/gres"; : >"$tmp/ix"; : >"$tmp/diff"; : >"$tmp/gdiff"; : >"$tmp/ready"; : >"$tmp/crash"
for _ in $(seq "$runs"); do
  t=${EPOCHREALTIME/./}; srun true; e=${EPOCHREALTIME/./}; b=$((e - t)); echo $b >>"$tmp/base"
  t=${EPOCHREALTIME/./}; srun --gres=gpu:4 true; e=${EPOCHREALTIME/./}; g=$((e - t)); echo $g >>"$tmp/gres"
  t=${EPOCHREALTIME/./}; srun "${opts[@]}" true; e=${EPOCHREALTIME/./}; echo $((e - t)) >>"$tmp/ix"
  # Paired: the sruns of one round see the same load.
  echo $((e - t - b)) >>"$tmp/diff"; echo $((e - t - g)) >>"$tmp/gdiff"
  srun "${opts[@]}" bash -c 'c=${EPOCHREALTIME/./}; t=$(grep -m1 "Starting vLLM API server" "$IX_RESULT_DIR/server.log" | cut -d" " -f1); echo $((c / 1000 - $(date -d "$t" +%s%3N)))' >>"$tmp/ready"
  # The crash time is the EngineCore's own log line (ms, UTC).
  IX_RESULT_DIR=$tmp FAKE_VLLM_CRASH_ENGINE_AFTER_S=0.3 srun "${opts[@]}" sleep 30 2>/dev/null || true
  end=${EPOCHREALTIME/./}; end=$((end / 1000))
  crashed=$(grep -m1 'EngineCore encountered a fatal error' "$tmp/server.log" | cut -d' ' -f1)
  echo $((end - $(date -d "$crashed" +%s%3N))) >>"$tmp/crash"
  rm -f "$tmp/server.log"
done
base=$(median <"$tmp/base"); ix=$(median <"$tmp/ix"); diff=$(median <"$tmp/diff"); gres=$(median <"$tmp/gres"); gdiff=$(median <"$tmp/gdiff"); ready=$(median <"$tmp/ready"); crash=$(median <"$tmp/crash")
echo "| measure (median of $runs) | value | baseline in the same run | difference or ratio |"
echo "| --- | --- | --- | --- |"
echo "| srun with a tp4 step on the instant fake engine | $(ms "$ix") ms | plain srun true: $(ms "$base") ms | +$(ms "$diff") ms (median of the paired differences) |"
echo "| the same | | srun --gres=gpu:4 true: $(ms "$gres") ms | +$(ms "$gdiff") ms |"
echo "| engine listening to client start | $ready ms | | |"
echo "| EngineCore crash to srun exit | $crash ms | | |"
rm -rf "$tmp"
