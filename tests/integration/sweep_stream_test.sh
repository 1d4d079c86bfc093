#!/usr/bin/env bash
# ixsubmit sweep with its stream, end to end on the local cluster: a node
# agent started here (as root, on a private socket the cluster's plugstack
# agent_socket= points at), and sweeps with --node-results, whose steps
# write their results on the node only: every entry's client result, agg
# result, benchmark.env, server.log, gpu_metrics.csv and status.json reach the sweep directory's
# results/INDEX/ through the agent and the sweep's collector, `ixsubmit
# events SWEEP --json` lists the entries' events, and the token stays in
# its 0600 file; `ixsubmit results` and `ixsubmit report` read it back and
# the report opens in headless Chromium. Then a fail-fast sweep whose expert-parallel engines exit:
# the failed entry's logs still arrive, nothing is left queued.
# Restarts the cluster with agent_socket= and restores the plugstack.conf it
# found. Exit 77 (skipped) while the agent has no daemon loop.
# Usage: sweep_stream_test.sh IX_NODE_AGENT [FAKE_NVML_DIR]; needs the
# CTest cluster fixture, SLURM_CONF, IX_CLUSTER_DIR, IX_SOURCE_DIR,
# IX_FAKES_BIN_DIR, IXSUBMIT, IXCTL.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ix_require_env IX_CLUSTER_DIR IX_SOURCE_DIR IX_FAKES_BIN_DIR IXSUBMIT IXCTL SLURM_CONF
agent_bin=${1:?usage: sweep_stream_test.sh IX_NODE_AGENT [FAKE_NVML_DIR]} nvml_dir=${2:-}
if "$agent_bin" --help 2>&1 | grep -q "daemon loop .* is not built yet"; then
  echo "SKIP: $agent_bin has no daemon yet"; exit 77
fi
CLUSTER=$IX_SOURCE_DIR/scripts/local-cluster.sh
tmp=$(mktemp -d /tmp/ix-sweep-stream.XXXXXX)
ORIG_ARGS=${IX_SPANK_ARGS-}
agent=
cleanup() {
  [[ -n $agent ]] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  IX_SPANK_ARGS=$ORIG_ARGS "$CLUSTER" restart >"$tmp/restore.log" 2>&1 ||
    { echo "FAIL: could not restore the cluster:"; cat "$tmp/restore.log"; }
  rm -rf "$tmp"
}
trap cleanup EXIT
export FAKE_VLLM_RECORD_DIR=$tmp
cfg=$IX_SOURCE_DIR/recipes/examples/dsv41flash-b300-1k1k.yaml
key=dsv41flash-fp4-b300-vllm
sock=$tmp/agent.sock node=$tmp/node db=$tmp/ix.db

# The node agent, with the fake NVML when there is one (gpu_metrics.csv rows).
nvml=0
if [[ -n $nvml_dir && -e $nvml_dir/libnvidia-ml.so.1 ]]; then
  printf 'gpus 8\n' >"$tmp/nvml.script"
  nvml=1
fi
if ((nvml)); then
  IX_NVML_LIBRARY=$nvml_dir/libnvidia-ml.so.1 IX_FAKE_NVML_SCRIPT=$tmp/nvml.script \
    "$agent_bin" --config /dev/null --socket "$sock" --spool "$tmp/spool" --metrics-listen 127.0.0.1:0 --interval 1 \
    >"$tmp/agent.log" 2>&1 &
else
  "$agent_bin" --config /dev/null --socket "$sock" --spool "$tmp/spool" --metrics-listen 127.0.0.1:0 --interval 1 \
    >"$tmp/agent.log" 2>&1 &
fi
agent=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || { echo "FAIL: the node agent did not start: $(cat "$tmp/agent.log")"; exit 1; }
if ! IX_SPANK_ARGS="$ORIG_ARGS agent_socket=$sock" "$CLUSTER" restart >"$tmp/restart.log" 2>&1; then
  echo "FAIL: cluster restart failed:"; cat "$tmp/restart.log"; exit 1
fi
echo "ok: node agent on $sock (fake NVML: $nvml), cluster restarted with agent_socket="

# sweep MODE DIR ARGS...: a --node-results sweep of the three conc-2 entries.
sweep() {
  "$IXSUBMIT" sweep "$1" --config-files "$cfg" --config-keys "$key" --conc 2 --db "$db" --sweep-dir "$2" \
    --no-container --throttle 2 --node-results "$node" --agent-socket "$sock" "${@:3}"
}
queue_empty() {
  for _ in $(seq 50); do
    [[ -z $(squeue -h -u "$(id -un)" --states=PENDING,RUNNING,COMPLETING,SUSPENDED) ]] && return 0
    sleep 0.1
  done
  return 1
}
entries_of() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["entries"]))' "$1/sweep.json"; }

# 1. A clean sweep: everything arrives through the stream.
sweep full-sweep-enabled "$tmp/ok" -- ix-fake-client --sessions 2 --turns 2 >"$tmp/ok.out" 2>&1 ||
  fail "clean sweep failed: $(tail -5 "$tmp/ok.out")"
id=$(grep -o 'sw-[0-9-]*[0-9a-f]*' "$tmp/ok.out" | head -1)
grep -q "^sweep $id: collector on 0\.0\.0\.0:[0-9]* (jobs report to http://.*:[0-9]*)$" "$tmp/ok.out" ||
  fail "no collector line: $(head -3 "$tmp/ok.out")"
n=$(entries_of "$tmp/ok")
[[ $n -ge 2 ]] || fail "clean sweep: $n entries"
for ((i = 0; i < n; i++)); do
  r=$tmp/ok/results/$i
  name=$(set -a && . "$r/benchmark.env" 2>/dev/null && echo "$RESULT_FILENAME")
  [[ -n $name ]] || fail "entry $i: no benchmark.env with RESULT_FILENAME in $r"
  [[ -f $node/$id/$i/$name.json ]] || fail "entry $i: the step did not write on the node ($node/$id/$i)"
  for f in "$name.json" "agg_$name.json" benchmark.env server.log gpu_metrics.csv status.json; do
    [[ -f $r/$f ]] || { fail "entry $i: $f did not arrive in $r: $(ls "$r" 2>&1 | tr '\n' ' ')"; continue; }
    cmp -s "$r/$f" "$node/$id/$i/$f" || fail "entry $i: $f differs from the node's"
  done
  grep -q '"state":"succeeded"' "$r/status.json" 2>/dev/null || fail "entry $i: status.json: $(cat "$r/status.json")"
  if ((nvml)); then
    head -1 "$r/gpu_metrics.csv" | grep -q '^timestamp' || fail "entry $i: gpu_metrics.csv has no header"
    [[ $(wc -l <"$r/gpu_metrics.csv") -ge 2 ]] || fail "entry $i: gpu_metrics.csv has no rows"
    # InferenceX's rules for a valid power measurement (aggregate_power.py's
    # power_valid), for the entry's GPUs over its client's benchmark window.
    gpus=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["entries"][int(sys.argv[2])]["gpus"])' \
      "$tmp/ok/sweep.json" "$i")
    "$(dirname "$0")/power_check.py" "$r/gpu_metrics.csv" "$r/$name.json" "$gpus" >"$tmp/power.$i" 2>&1 ||
      fail "entry $i: $(cat "$tmp/power.$i"); csv: $(head -3 "$r/gpu_metrics.csv"; tail -2 "$r/gpu_metrics.csv"); window: $(grep -o "\"benchmark_[a-z_]*\": [0-9.]*" "$r/$name.json" | tr "\n" " ")"
    # The task's own reading of the same rules (aggregate_power.py's, in C++).
    grep -q '"power_valid": 1,' "$r/agg_$name.json" || fail "entry $i: the agg result's power is not valid: $(cat "$r/agg_$name.json")"
  fi
done
"$IXSUBMIT" status --db "$db" "$id" >"$tmp/ok.status" 2>&1
[[ $(grep -c succeeded "$tmp/ok.status") -ge $n ]] || fail "status: $(cat "$tmp/ok.status")"
"$IXSUBMIT" events "$id" --db "$db" --json >"$tmp/ok.events" || fail "ixsubmit events failed"
python3 - "$tmp/ok.events" "$n" <<'PY' || fail "events: $(head -c 600 "$tmp/ok.events")"
import json, sys
events, n = json.load(open(sys.argv[1])), int(sys.argv[2])
for i in range(n):
    mine = [e for e in events if e.get("entry") == i]
    states = [e.get("state") for e in mine if e["event"] == "entry"]
    assert states[:1] == ["running"] and "succeeded" in states, (i, states)
    kinds = {e["event"] for e in mine}
    assert {"started", "ready", "finished", "result"} <= kinds, (i, sorted(kinds))
    names = {e.get("name") for e in mine if e["event"] == "result"}
    assert {"benchmark.env", "server.log", "gpu_metrics.csv", "status.json"} <= names, (i, sorted(names))
    assert any(n.startswith("agg_") for n in names), (i, sorted(names))
    assert all(e.get("node") and e.get("sender") for e in mine), i
PY
"$IXSUBMIT" events "$id" --db "$db" --results --json >"$tmp/ok.results"
[[ $(grep -o '"name"' "$tmp/ok.results" | wc -l) -ge $((4 * n)) ]] || fail "stored results: $(cat "$tmp/ok.results")"
# The token: its own 0600 file, never in sweep.json, the output or the logs.
token=$(cat "$tmp/ok/collector.token")
[[ ${#token} -eq 64 ]] || fail "token: ${#token} characters"
[[ $(stat -c %a "$tmp/ok/collector.token") == 600 ]] || fail "token mode $(stat -c %a "$tmp/ok/collector.token")"
grep -rqF -- "$token" "$tmp/ok/sweep.json" "$tmp/ok.out" "$tmp/ok/logs" "$tmp/agent.log" && fail "the token leaked"
queue_empty || fail "clean sweep: jobs left: $(squeue -h)"
check_clean "clean sweep"
echo "ok: clean sweep: $n entries, their files through the stream: $(tail -1 "$tmp/ok.out")"

# The sweep's results as InferenceX's collect_results.py gathers them, and its
# report in headless Chromium: one chart of each kind the data calls for, one
# series per arm (TTFT: mean and p99 per arm; DEP: one per rank), no console
# error (tests/report_browser_test.py).
"$IXSUBMIT" results "$id" --db "$db" -o "$tmp/agg.json" 2>/dev/null || fail "ixsubmit results failed"
"$IXSUBMIT" results "$id" --db "$db" --format json -o "$tmp/results.json" 2>/dev/null || fail "ixsubmit results --format json failed"
"$IXSUBMIT" report "$id" --db "$db" -o "$tmp/report.html" >/dev/null || fail "ixsubmit report failed"
read -r charts series points < <(python3 - "$tmp/results.json" "$tmp/agg.json" "$n" <<'PY'
import json, sys
entries, aggs, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert len(aggs) == n and all(a["ix"]["entry"] == e["entry"] for a, e in zip(aggs, entries)), "agg list"
res = [e["result"] for e in entries if e["result"]]
arms = {r["ix"]["arm"] for r in res}
power = {r["ix"]["arm"] for r in res if r.get("power_valid") == 1}
ranks = max((len(r["ix"]["sessions_per_rank"]) for r in res), default=0)
charts = 2 + (1 if power else 0) + (1 if ranks else 0)
points = len(res) * 3 + sum(1 for r in res if r.get("power_valid") == 1) + \
    sum(len(r["ix"]["sessions_per_rank"]) for r in res)
print(charts, len(arms) * 3 + len(power) + ranks, points)
PY
) || fail "results: $(head -c 600 "$tmp/results.json")"
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
  python3 "$IX_SOURCE_DIR/tests/report_browser_test.py" "$tmp/report.html" --charts "$charts" --series "$series" \
    --min-points "$points" >"$tmp/browser.out" 2>&1 || fail "report in Chromium: $(tail -5 "$tmp/browser.out")"
  echo "ok: report: $(tail -1 "$tmp/browser.out")"
else
  echo "SKIP: no chromium/chromedriver: the report was not opened in a browser"
fi

# 2. Fail-fast: the expert-parallel engines exit at start. The bucket stops,
#    the failed entries' logs and status still arrive, nothing stays queued.
FAKE_VLLM_EXIT0_AFTER_S=0.001 FAKE_VLLM_FAULT_ONLY_IF_ARG=--enable-expert-parallel \
  sweep full-sweep-fail-fast "$tmp/ff" -- ix-fake-client --sessions 2 --turns 50 >"$tmp/ff.out" 2>&1 &&
  fail "fail-fast sweep exited 0"
fid=$(grep -o 'sw-[0-9-]*[0-9a-f]*' "$tmp/ff.out" | head -1)
"$IXSUBMIT" status --db "$db" "$fid" >"$tmp/ff.status" 2>&1
grep -q failed "$tmp/ff.status" || fail "fail-fast: no failed entry: $(cat "$tmp/ff.status")"
failed_logs=0
for d in "$tmp"/ff/results/*/; do
  grep -q '"state":"failed"' "$d/status.json" 2>/dev/null || continue
  [[ -f $d/server.log ]] && failed_logs=$((failed_logs + 1))
done
[[ $failed_logs -ge 1 ]] || fail "fail-fast: no failed entry's server.log arrived: $(ls -R "$tmp/ff/results")"
grep -q "results not delivered" "$tmp/ff.status" && fail "fail-fast: results not delivered: $(cat "$tmp/ff.status")"
queue_empty || fail "fail-fast: jobs left: $(squeue -h)"
check_clean "fail-fast sweep"
echo "ok: fail-fast: $(tail -1 "$tmp/ff.out")"

ix_finish sweep_stream_test
