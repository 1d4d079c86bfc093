#!/usr/bin/env bash
# Process-level test of the fake aiperf (tests/fakes/README.md, "aiperf")
# against the fake vllm: InferenceX's exact `aiperf profile` line (short,
# with --unsafe-override) replays the shipped trace set and writes the four
# artifacts in their formats; drift in the command line is refused with
# exit 2; against a dead server the failed-request threshold stops the run
# early with exit 1 and the artifacts still written. About 10 s.
# Usage: aiperf_test.sh BIN_DIR   (the directory holding aiperf and vllm)
set -euo pipefail

BIN=${1:?usage: aiperf_test.sh BIN_DIR}
# shellcheck source=tests/fakes/fakes_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/fakes_lib.sh"
command -v python3 >/dev/null || { echo "aiperf_test.sh: needs python3" >&2; exit 1; }
TMP=$(mktemp -d /tmp/ix-aiperf-test.XXXXXX)
VLLM_PID=
FAILED=0
cleanup() {
  if [[ -n $VLLM_PID ]]; then
    kill -TERM "$VLLM_PID" 2>/dev/null || true
    wait "$VLLM_PID" 2>/dev/null || true
  fi
  remove_tmp
}
trap cleanup EXIT

# replay_cmd PORT DURATION CONC OUT_DIR: build_replay_cmd's tokens (agentic
# spec 1.3), in its order, for a short run.
replay_cmd() {
  echo "$BIN/aiperf profile --scenario inferencex-agentx-mvp --url http://localhost:$1" \
    "--endpoint /v1/chat/completions --endpoint-type chat --streaming --model m --tokenizer org/m" \
    "--concurrency $3 --benchmark-duration $2 --stats-interval 30 --random-seed 42" \
    "--failed-request-threshold 0.10 --trajectory-start-min-ratio 0.25 --trajectory-start-max-ratio 0.75" \
    "--warmup-requests-per-lane 1 --trace-idle-gap-cap-seconds 2 --warmup-grace-period 1800" \
    "--use-server-token-count --no-gpu-telemetry --tokenizer-trust-remote-code --num-dataset-entries 393" \
    "--slice-duration 1.0 --server-metrics http://localhost:$1/metrics --output-artifact-dir $4" \
    "--unsafe-override --public-dataset semianalysis_cc_traces_weka_062126"
}

# ---- a replay against the fake vllm
P=$(free_port)
FAKE_VLLM_RECORD_DIR=$TMP FAKE_VLLM_TOKEN_DELAY_MS=1 "$BIN/vllm" serve /models/m --served-model-name m \
  --port "$P" --data-parallel-size 2 >"$TMP/vllm.log" 2>&1 &
VLLM_PID=$!
for _ in $(seq 100); do
  python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $P), 0.2)" 2>/dev/null && break
  sleep 0.05
done
ART=$TMP/results/aiperf_artifacts
# shellcheck disable=SC2046  # REPLAY_CMD is word-split, as InferenceX runs it
AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID=1 timeout 60 $(replay_cmd "$P" 4 3 "$ART") >"$TMP/aiperf.log" 2>&1 ||
  fail "the replay exited $?"
ok "InferenceX's replay line runs against the fake vllm"
python3 - "$ART" <<'PY' || fail "artifacts"
import json, sys
art = sys.argv[1]
recs = [json.loads(l) for l in open(f"{art}/profile_export.jsonl") if l.strip()]
warm = [r for r in recs if r["metadata"]["benchmark_phase"] == "warmup"]
prof = [r for r in recs if r["metadata"]["benchmark_phase"] == "profiling"]
assert len(warm) == 3, len(warm)
assert len(prof) >= 6, len(prof)
assert all(r["error"] is None for r in recs), [r["error"] for r in recs if r["error"]]
for r in prof:
    md, m = r["metadata"], r["metrics"]
    assert md["request_start_ns"] <= md["request_ack_ns"] <= md["request_end_ns"], md
    assert md["conversation_id"].startswith("synthetic-"), md
    assert md["served_by_rank"] in (0, 1), md
    for k in ("input_sequence_length", "output_sequence_length"):
        assert m[k]["unit"] == "tokens" and m[k]["value"] > 0, m
    for k in ("time_to_first_token", "request_latency"):
        assert m[k]["unit"] == "ms" and m[k]["value"] > 0, m
# a session keeps its correlation id across turns; several turns each
by_conv = {}
for r in recs:
    by_conv.setdefault(r["metadata"]["conversation_id"] + str(r["metadata"]["session_num"]), set()).add(
        r["metadata"]["x_correlation_id"])
assert all(len(v) == 1 for v in by_conv.values()), by_conv
agg = json.load(open(f"{art}/profile_export_aiperf.json"))
assert agg["request_count"]["avg"] == len(prof), agg["request_count"]
assert agg["error_request_count"]["avg"] == 0
assert agg["completed_request_count"]["avg"] == len(prof)
hit = agg["theoretical_prefix_cache_hit"]
assert hit["count"] > 0 and 0 < hit["sum"] <= hit["count"], hit
assert agg["metadata"]["dataset"]["hf_dataset_name"] == "semianalysisai/cc-traces-weka-062126"
assert agg["start_time"] < agg["end_time"] and "+" not in agg["start_time"]
sm = json.load(open(f"{art}/server_metrics_export.json"))
gen = sm["metrics"]["vllm:generation_tokens"]
assert gen["type"] == "counter"
total = sum(s["stats"]["total"] for s in gen["series"])
osl = sum(r["metrics"]["output_sequence_length"]["value"] for r in prof)
assert osl - 2 <= total <= osl + 3 * 48, (total, osl)  # profiling only; requests in flight at the start scrape
assert all(s["endpoint_url"].endswith("/metrics") and s["timeslices"] for s in gen["series"]), gen
assert sm["metrics"]["vllm:kv_cache_usage_perc"]["series"][0]["stats"]["max"] >= 0
assert open(f"{art}/server_metrics_export.csv").read().startswith("Endpoint,Metric,Labels")
PY
ok "profile_export.jsonl, profile_export_aiperf.json, server_metrics_export.{json,csv}"

# ---- drift in the command line is refused, naming it
expect_refused() {  # expect_refused WORD ARGS...
  local word=$1 rc=0
  shift
  "$@" >"$TMP/refused.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "exit $rc, not 2, for: $*"
  grep -q -- "$word" "$TMP/refused.log" || fail "the error does not name '$word': $(cat "$TMP/refused.log")"
}
# shellcheck disable=SC2046
{
  expect_refused --unsafe-override $(replay_cmd "$P" 20 1 "$TMP/x" | sed 's/ --unsafe-override//')
  expect_refused --request-rate $(replay_cmd "$P" 4 1 "$TMP/x") --request-rate 5
  expect_refused --output-artifact-dir $(replay_cmd "$P" 4 1 "$TMP/x" | sed 's/--output-artifact-dir [^ ]*/--output-artifact-dir/')
  expect_refused analyze-trace "$BIN/aiperf" analyze-trace --scenario inferencex-agentx-mvp
}
ok "an unknown flag, a missing value, another subcommand, a short run without --unsafe-override: exit 2"

# ---- the failure threshold: nothing listens, the run stops early with 1
DEAD=$(free_port)
start=$SECONDS
rc=0
# shellcheck disable=SC2046
timeout 60 $(replay_cmd "$DEAD" 30 2 "$TMP/dead") >"$TMP/dead.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "against a dead server: exit $rc, not 1"
((SECONDS - start < 15)) || fail "the failure threshold did not stop the run early"
grep -q 'failed-request-threshold' "$TMP/dead.log" || fail "no threshold message"
python3 - "$TMP/dead" <<'PY' || fail "artifacts after the early stop"
import json, sys
agg = json.load(open(f"{sys.argv[1]}/profile_export_aiperf.json"))
assert agg["error_request_count"]["avg"] >= 10 and agg["request_count"]["avg"] == 0, agg
assert agg["was_cancelled"] is True
rec = json.loads(open(f"{sys.argv[1]}/profile_export.jsonl").readline())
assert rec["error"]["type"] == "ClientConnectionError", rec
PY
ok "a dead server: stopped after max(C, 10) failed records, exit 1, artifacts written"
