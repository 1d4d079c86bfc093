#!/usr/bin/env bash
# agent_bench.sh BUILD_DIR [SECONDS]: ix-node-agent's own cost on a private
# local cluster (its own directory and ports), against a baseline in the
# same run: the same agent, sampling at 1 Hz, for SECONDS (default 30)
#  - idle: no step on the node (the baseline);
#  - watching a dep4 step: the fake engine (one engine with 4 DP ranks and
#    the router) serving a client that keeps it busy, 8 fake GPUs (NVML
#    through tests/fakes' libnvidia-ml.so.1), the step's gpu_metrics.csv
#    written, its process tree measured, its engine's /metrics read for
#    hangs, every event spooled and delivered to a collector.
# CPU time is the agent's utime+stime over the window (/proc/PID/stat), RSS
# its peak (VmHWM). Prints Markdown.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build}; secs=${2:-30}
. "$repo/bench/cluster.sh"
tmp=$(mktemp -d /tmp/ix-agent-bench.XXXXXX)
sock=$tmp/agent.sock
agent= collector=
cleanup() {
  { kill $agent $collector; wait; } 2>/dev/null
  bench_cluster_stop
  rm -rf "$tmp"
}
trap cleanup EXIT
bench_cluster agent-bench 17927 agent_socket=$sock
export FAKE_VLLM_RECORD_DIR=$tmp

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"; chmod 600 "$tmp/token"
"$build/submitter/ixsubmit" serve --listen 127.0.0.1:0 --db "$tmp/ix.db" --token-file "$tmp/token" >"$tmp/serve.out" 2>&1 &
collector=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/serve.out" && break; sleep 0.1; done
port=$(sed -n 's/^ixsubmit serve: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/serve.out")
printf 'gpus 8\n' >"$tmp/nvml.script"
IX_NVML_LIBRARY=$build/tests/fakes/nvml/libnvidia-ml.so.1 IX_FAKE_NVML_SCRIPT=$tmp/nvml.script \
  "$build/node_agent/ix-node-agent" --config /dev/null --socket "$sock" --spool "$tmp/spool" --interval 1 \
  --collector "http://127.0.0.1:$port" --token-file "$tmp/token" --metrics-listen 127.0.0.1:0 >"$tmp/agent.log" 2>&1 &
agent=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
# measure: CPU seconds of the agent over $secs.
measure() {
  local a b
  a=$(cpu_ticks); sleep "$secs"; b=$(cpu_ticks)
  awk -v d=$((b - a)) -v t="$ticks" 'BEGIN {printf "%.3f", d / t}'
}
idle_cpu=$(measure)
idle_rss=$(awk '/VmHWM/ {print $2}' "/proc/$agent/status")

# A dep4 step whose client keeps the engine busy for the whole window.
IX_RESULT_DIR=$tmp/result srun --gres=gpu:4 --inferencex-recipe=dsv41flash-fp4-b300-vllm --inferencex-arm=dep4 --inferencex-conc=64 \
  ix-fake-client --sessions 64 --turns 100000 --keep-going >"$tmp/step.out" 2>&1 &
step=$!
for _ in $(seq 300); do grep -q '"event":"ready"' "$tmp"/spool/default/events-*.jsonl 2>/dev/null && break; sleep 0.1; done
grep -q '"event":"ready"' "$tmp"/spool/default/events-*.jsonl || { echo "the dep4 step did not become ready: $(tail -5 "$tmp/step.out")" >&2; exit 1; }
step_cpu=$(measure)
step_rss=$(awk '/VmHWM/ {print $2}' "/proc/$agent/status")
rows=$(wc -l <"$tmp/result/gpu_metrics.csv" 2>/dev/null || echo 0)
scancel --signal=INT "$(squeue -h -o %i | head -1)" 2>/dev/null || true
wait $step 2>/dev/null || true

pct() { awk -v c="$1" -v s="$secs" 'BEGIN {printf "%.2f", 100 * c / s}'; }
echo "| ix-node-agent at 1 Hz, ${secs} s each | CPU (% of one core) | peak RSS | ratio to idle (CPU) |"
echo "| --- | --- | --- | --- |"
echo "| idle node (baseline) | $(pct "$idle_cpu") % | $((idle_rss / 1024)) MiB | 1 |"
echo "| watching a dep4 step (8 fake GPUs, $rows CSV lines) | $(pct "$step_cpu") % | $((step_rss / 1024)) MiB | $(awk -v a="$step_cpu" -v b="$idle_cpu" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}') |"
