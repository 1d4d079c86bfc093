#!/usr/bin/env bash
# main-job.sh: the main job on the embedded default. Installs what is
# needed, builds, starts the private local Slurm cluster with the plugin
# loaded and a node agent beside it, runs a dep4 job step of the default
# recipe through it on the fake engine, router and client, then a sweep of
# the seed's agentic rows (AgentX traces replayed by the fake AIPerf) beside
# their fixed-seq-len companion (benchmark_serving.py's command, the fake
# client behind it), whose results reach the sweep directory only through
# the agent and the sweep's collector, and prints the client's result and
# where everything is. Run as root on Debian 12.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
RECIPE=${IX_RECIPE:-dsv41flash-fp4-b300-vllm}
out=$repo/build/main-job
export IX_CLUSTER_DIR=${IX_CLUSTER_DIR:-$repo/build/local-cluster}
export IX_RECIPE_DIR=$repo/recipes
# This machine has no GPUs: steps are placed on the HGX B300 node that the
# fixture describes (plugstack.conf topology=), as a site can check a node
# type offline.
agent_dir=$out/agent
export IX_SPANK_ARGS="topology=$repo/tests/fixtures/topology/hgx-b300-4tib.xml memlock=keep agent_socket=$agent_dir/agent.sock"

scripts/bootstrap.sh
scripts/build.sh "$repo/build"
# The node agent (docs/AGENT.md), with tests/fakes' NVML standing in for 8
# GPUs: events, gpu_metrics.csv, /metrics, delivery to the sweep's collector.
if [[ -f $agent_dir/agent.pid ]]; then kill "$(cat "$agent_dir/agent.pid")" 2>/dev/null || true; fi
rm -rf "$agent_dir" && mkdir -p "$agent_dir"
printf 'gpus 8\nidle_watts 80\nbusy_watts 680\n' >"$agent_dir/nvml.script"
IX_NVML_LIBRARY=$repo/build/tests/fakes/nvml/libnvidia-ml.so.1 IX_FAKE_NVML_SCRIPT=$agent_dir/nvml.script \
  setsid build/node_agent/ix-node-agent --config /dev/null --socket "$agent_dir/agent.sock" --spool "$agent_dir/spool" \
  --metrics-listen 127.0.0.1:0 >"$agent_dir/agent.log" 2>&1 </dev/null &
echo $! >"$agent_dir/agent.pid"
for _ in $(seq 100); do [[ -S $agent_dir/agent.sock ]] && break; sleep 0.1; done
scripts/local-cluster.sh restart
eval "$(scripts/local-cluster.sh env)"
mkdir -p "$out"

echo "== srun --help (plugin options)"
srun --help 2>&1 | grep -A1 -- '--inferencex' | tee "$out/srun-help.txt"
echo "== srun --inferencex-arm=nope true (refused before allocation)"
if srun --inferencex-arm=nope true 2>"$out/refused.txt"; then
  echo "main-job.sh: srun accepted an unknown arm" >&2; exit 1
fi
cat "$out/refused.txt"
echo "== srun --gres=gpu:4 --inferencex-arm=dep4 --inferencex-recipe=$RECIPE --inferencex-conc=64 ix-fake-client"
rm -rf "$out/dep4-step" && mkdir -p "$out/dep4-step" "$out/sweep-records"
PATH=$repo/build/tests/fakes/bin:$PATH IX_RESULT_DIR=$out/dep4-step FAKE_VLLM_RECORD_DIR=$out/dep4-step \
  srun --gres=gpu:4 --inferencex-arm=dep4 --inferencex-recipe="$RECIPE" --inferencex-conc=64 \
  bash -c 'cp "$IX_RUN_DIR/plan.json" "$IX_RUN_DIR/placement.json" "$IX_RESULT_DIR/"; ix-fake-client --sessions 16 --turns 3 --out "$IX_RESULT_DIR/result.json"'
python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["summary"], indent=1))' "$out/dep4-step/result.json"
# --no-container: the local cluster has no Pyxis, so the steps run on the host
# instead of in the config row's image.
echo "== ixsubmit sweep full-sweep-fail-fast: the agentic rows of recipes/examples/dsv41flash-b300.yaml and the"
echo "   fixed-seq-len rows of recipes/examples/dsv41flash-b300-1k1k.yaml (TP4 1-128, TEP4/DEP4 32-128 each),"
echo "   each entry with InferenceX's own client command (agentic replays ${IX_AGENTIC_DURATION:-20} s: a smoke run)"
rm -rf "$out/sweep" "$out/ix.db"*
# The fake engine's latency model (tests/fakes/README.md): a per-token delay
# that grows with the sequences running on a rank, and a prefill delay, so
# the sweep's numbers have the shape of a serving run (throughput up and
# interactivity down with concurrency).
PATH=$repo/build/tests/fakes/bin:$PATH FAKE_VLLM_RECORD_DIR=$out/sweep-records \
  FAKE_VLLM_TOKEN_DELAY_MS=${FAKE_VLLM_TOKEN_DELAY_MS:-0.1} \
  FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS=${FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS:-0.02} \
  FAKE_VLLM_PREFILL_MS_PER_1K=${FAKE_VLLM_PREFILL_MS_PER_1K:-20} \
  build/submitter/ixsubmit sweep full-sweep-fail-fast \
  --config-files recipes/examples/dsv41flash-b300-1k1k.yaml recipes/examples/dsv41flash-b300.yaml \
  --config-keys dsv41flash-fp4-b300-vllm dsv41flash-fp4-b300-vllm-agentic-dspark \
  --sweep-dir "$out/sweep" --db "$out/ix.db" --no-container --agent-socket "$agent_dir/agent.sock" \
  --node-results "$out/node-results" --duration "${IX_AGENTIC_DURATION:-20}" --no-evals \
  --bench-serving-dir "$repo/tests/fakes/inferencex-workspace"
build/submitter/ixsubmit status --db "$out/ix.db" "$(build/submitter/ixsubmit status --db "$out/ix.db" | awk 'NR==2 {print $1}')" |
  tee "$out/sweep-status.txt"
sweep_id=$(build/submitter/ixsubmit status --db "$out/ix.db" | awk 'NR==2 {print $1}')
echo "== the sweep's results as InferenceX's collect_results.py gathers them, and its report"
build/submitter/ixsubmit results "$sweep_id" --db "$out/ix.db" --format inferencex -o "$out/agg.json"
build/submitter/ixsubmit results "$sweep_id" --db "$out/ix.db" --format csv -o "$out/results.csv"
build/submitter/ixsubmit report "$sweep_id" --db "$out/ix.db" -o "$out/report.html"
echo "== dep4 launch plan at concurrency 64"
build/submitter/ixsubmit plan --recipe "$RECIPE" --arm dep4 --conc 64 | tee "$out/dep4-c64.txt"
build/submitter/ixsubmit plan --recipe "$RECIPE" --arm dep4 --conc 64 --json >"$out/dep4-c64.json"

cat <<MSG

Results in $out:
  report.html      the sweep's report: per config key throughput/GPU vs interactivity per arm, TTFT,
                   energy per token, DEP session spread (fixed-seq-len); TTFT by turn, prefix-cache hit
                   rates, KV usage over time, sessions and hit rate per DP rank (agentic); every entry
                   with its logs (open it in a browser)
  agg.json         the entries' results in one list as InferenceX's collect_results.py gathers them
                   (fixed-seq-len agg results and agentic aggregates); results.csv one row per entry
  sweep/           the sweep: sweep.json (entries), *.sbatch, logs/ (%x_%A_%a.out), results/N/ (per entry:
                   benchmark.env, server.log, gpu_metrics.csv, status.json; fixed-seq-len: the client's
                   RESULT_FILENAME.json and agg_RESULT_FILENAME.json as process_result.py makes it;
                   agentic: aiperf_artifacts/, benchmark_command.txt and RESULT_FILENAME.json as
                   process_agentic_result.py and power_adapter.py make it; delivered by the node agent
                   to the sweep's collector); sweep-status.txt is its table,
                   ix.db its SQLite state (and events: build/submitter/ixsubmit events --db $out/ix.db)
  node-results/    where each entry's step wrote on the node (the sweep never reads it)
  agent/           the node agent: agent.log, its spool; /metrics on the port agent.log names
  dep4-step/       the dep4 step: result.json (client), server.log, router.log,
                   plan.json (leased ports), placement.json (NUMA, CPUs), vllm-*.json (engine argv)
  dep4-c64.json    the dep4 launch plan (argv, env, ports, ranks, readiness)
  dep4-c64.txt     the same, readable
  srun-help.txt    the plugin's options as srun shows them
  refused.txt      srun's message for an unknown arm
The local cluster and the node agent are still running ($IX_CLUSTER_DIR):
  eval "\$(scripts/local-cluster.sh env)"; sinfo      use it
  scripts/local-cluster.sh stop                    stop it
  kill \$(cat $agent_dir/agent.pid)                stop the agent
MSG
