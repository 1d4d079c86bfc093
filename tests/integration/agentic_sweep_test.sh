#!/usr/bin/env bash
# Agentic-coding entries end to end on the local cluster: the seed's rows
# (recipes/examples/dsv41flash-b300.yaml) swept with no client given, so each
# entry runs build_replay_cmd's AIPerf command (the fake aiperf) against the
# fake engine and router; every entry's RESULT_FILENAME.json is the agentic
# aggregate with the project's ix key, the DEP entry's sessions spread over
# its ranks with their prefix-cache hit rates, `ixsubmit results` and
# `ixsubmit report` show them; a client that writes no artifacts fails its
# entry with that reason and fail-fast cancels the rest of its bucket. Needs
# the CTest cluster fixture, SLURM_CONF, IX_FAKES_BIN_DIR, IXSUBMIT,
# IX_SOURCE_DIR.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ix_require_env SLURM_CONF IX_FAKES_BIN_DIR IXSUBMIT IX_SOURCE_DIR
tmp=$(mktemp -d /tmp/ix-agentic-test.XXXXXX); trap 'rm -rf "$tmp"' EXIT
export FAKE_VLLM_RECORD_DIR=$tmp
cfg=$IX_SOURCE_DIR/recipes/examples/dsv41flash-b300.yaml
key=dsv41flash-fp4-b300-vllm-agentic-dspark
# One warmup request per lane and 4 s of profiling: a smoke run.
export AIPERF_WARMUP_REQUESTS_PER_LANE=1
sweep() {
  "$IXSUBMIT" sweep full-sweep-fail-fast-no-canary --config-files "$cfg" --config-keys "$key" --no-evals \
    --db "$tmp/ix.db" --no-container --no-collector --duration 4 "$@"
}
# json FILE EXPR: EXPR over the file's JSON as d.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# 1. Every arm at 2 and 32 (test-config's --conc), InferenceX's own client each.
sweep --conc 2 32 --throttle 2 --sweep-dir "$tmp/ok" >"$tmp/ok.out" 2>&1 || fail "agentic sweep failed: $(tail -5 "$tmp/ok.out")"
n=$(json "$tmp/ok/sweep.json" 'len(d["entries"])')
[[ $n == 6 ]] || fail "6 entries expected, got $n"
for ((i = 0; i < n; i++)); do
  r=$tmp/ok/results/$i
  arm=$(json "$tmp/ok/sweep.json" "d['entries'][$i]['arm'] + str(d['entries'][$i]['conc'])")
  name=$(set -a && . "$r/benchmark.env" 2>/dev/null && echo "$RESULT_FILENAME")
  [[ -n $name && -f $r/$name.json ]] || { fail "entry $i ($arm): no RESULT_FILENAME.json: $(ls "$r" | tr '\n' ' ')"; continue; }
  for f in profile_export.jsonl profile_export_aiperf.json server_metrics_export.json server_metrics_export.csv; do
    [[ -s $r/aiperf_artifacts/$f ]] || fail "entry $i ($arm): no aiperf_artifacts/$f"
  done
  grep -q "^aiperf profile --scenario inferencex-agentx-mvp --url http://localhost:[0-9]* .* --server-metrics http://localhost:[0-9]*/metrics --output-artifact-dir $r/aiperf_artifacts --unsafe-override --public-dataset semianalysis_cc_traces_weka_062126$" "$r/benchmark_command.txt" ||
    fail "entry $i ($arm): benchmark_command.txt: $(cat "$r/benchmark_command.txt")"
  grep -q "^AIPERF_SERVER_URL='http://localhost:[0-9]*'$" "$r/benchmark.env" || fail "entry $i: the step's AIPerf variables are not in benchmark.env"
  [[ $(json "$r/$name.json" 'd["scenario_type"], d["request_metrics"]["throughput"]["per_gpu"]["total_tput_tps"] > 0, d["num_requests_successful"] > 0') == 'agentic-coding True True' ]] ||
    fail "entry $i ($arm): not an agentic result with throughput: $(head -c 600 "$r/$name.json")"
  [[ $(json "$r/status.json" 'd["state"]') == succeeded ]] || fail "entry $i ($arm): $(cat "$r/status.json")"
  if [[ $arm == dep4* ]]; then
    grep -q "^KV_OFFLOAD_BACKEND='vllm-simple'$" "$r/benchmark.env" || fail "dep4: KV_OFFLOAD_BACKEND"
    grep -q "^AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID='1'$" "$r/benchmark.env" || fail "dep4: no session affinity header"
    # The row's DRAM tier reached the engine: the script's per-rank bytes.
    grep -qs "SimpleCPUOffloadConnector.*356000000000" "$tmp"/vllm-*.json || fail "dep4: the engine did not get the vllm-simple tier"
    [[ $(json "$r/$name.json" 'd["server_metrics"]["cache"]["cpu_cache_hit_rate"] is not None') == True ]] ||
      fail "dep4: no offload-tier hit rate: $(json "$r/$name.json" 'd["server_metrics"]["cache"]')"
  fi
  if [[ $arm == dep432 ]]; then
    # Every rank served sessions and reused their cache: affinity shown,
    # not assumed.
    spread=$(json "$r/$name.json" '[(x["rank"], x["sessions"]) for x in d["ix"]["dp_ranks"]]')
    [[ $(json "$r/$name.json" 'len(d["ix"]["dp_ranks"]) == 4 and all((x["sessions"] or 0) > 0 for x in d["ix"]["dp_ranks"])') == True ]] ||
      fail "dep4: sessions per rank $spread"
    [[ $(json "$r/$name.json" 'd["server_metrics"]["cache"]["gpu_cache_hit_rate"] > 0.3') == True ]] ||
      fail "dep4: prefix-cache hit rate $(json "$r/$name.json" 'd["server_metrics"]["cache"]')"
    echo "ok: dep4 sessions per rank $spread, GPU prefix-cache hit rate $(json "$r/$name.json" 'd["server_metrics"]["cache"]["gpu_cache_hit_rate"]')"
  fi
done
echo "ok: $n agentic entries with InferenceX's agentic result, AIPerf artifacts and command"

id=$(grep -o 'sw-[0-9-]*[0-9a-f]*' "$tmp/ok.out" | head -1)
"$IXSUBMIT" results "$id" --db "$tmp/ix.db" -o "$tmp/agg.json" 2>/dev/null || fail "ixsubmit results failed"
[[ $(json "$tmp/agg.json" 'sorted(set(x["scenario_type"] for x in d)), len(d)') == "['agentic-coding'] 6" ]] ||
  fail "results --format inferencex: $(head -c 300 "$tmp/agg.json")"
"$IXSUBMIT" results "$id" --db "$tmp/ix.db" --format csv -o "$tmp/results.csv" 2>/dev/null || fail "results csv failed"
[[ $(grep -c ',agentic-coding,' "$tmp/results.csv") == 6 ]] || fail "results csv: $(cat "$tmp/results.csv")"
"$IXSUBMIT" report "$id" --db "$tmp/ix.db" -o "$tmp/report.html" 2>/dev/null || fail "ixsubmit report failed"
for chart in agentic-throughput-interactivity agentic-ttft-turn agentic-cache-hit agentic-kv-usage agentic-dp-sessions; do
  grep -q "$chart" "$tmp/report.html" || fail "the report has no $chart chart"
done
echo "ok: ixsubmit results (inferencex list, csv) and report show the agentic entries"

# 2. A client that writes no artifacts fails its entry with that reason;
#    fail-fast cancels the rest of its bucket.
AIPERF_CLI=/bin/true sweep --conc 2 --throttle 1 --sweep-dir "$tmp/none" >"$tmp/none.out" 2>&1 &&
  fail "a sweep whose client wrote no artifacts succeeded"
r=$tmp/none/results/0
grep -q "the client wrote no AIPerf artifacts" "$r/status.json" || fail "no-artifacts reason: $(cat "$r/status.json" 2>&1)"
[[ $(json "$r/failure.json" 'd["process"]') == client ]] || fail "failure.json: $(cat "$r/failure.json" 2>&1)"
id=$(grep -o 'sw-[0-9-]*[0-9a-f]*' "$tmp/none.out" | head -1)
"$IXSUBMIT" results "$id" --db "$tmp/ix.db" --format json -o "$tmp/none.json" 2>/dev/null || fail "results json failed"
[[ $(json "$tmp/none.json" 'sum(x["state"] == "cancelled" for x in d) >= 1') == True ]] ||
  fail "fail-fast cancelled nothing: $(tail -5 "$tmp/none.out")"
echo "ok: no artifacts: $(json "$r/status.json" 'd["failure_reason"]')"

ix_finish "${0##*/}"
