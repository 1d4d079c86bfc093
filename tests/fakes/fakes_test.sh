#!/usr/bin/env bash
# Process-level test of the test doubles (tests/fakes/README.md): fake vllm
# readiness, EngineCore children, fault switches, SIGTERM cleanup, and the
# fake vllm-router's session affinity driven by ix-fake-client.
# Usage: fakes_test.sh BIN_DIR   (the directory holding vllm, vllm-router, ix-fake-client)
# `check && check || fail` is meant: fail when either check fails.
# shellcheck disable=SC2015
set -euo pipefail

BIN=${1:?usage: fakes_test.sh BIN_DIR}
# shellcheck source=tests/fakes/fakes_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/fakes_lib.sh"
for tool in curl ps python3; do
  command -v "$tool" >/dev/null || { echo "fakes_test.sh: needs $tool" >&2; exit 1; }
done
TMP=$(mktemp -d /tmp/ix-fakes-test.XXXXXX)
PIDS=()
exec 9>&2  # failures go here, also while stderr is muted
FAIL_FD=9
FAILED=0

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  remove_tmp
}
trap cleanup EXIT

# start NAME [ENV=VAL...] PROGRAM ARGS...: runs in the background, logs to $TMP/NAME.log, sets PID.
start() {
  local name=$1
  shift
  env "$@" >"$TMP/$name.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
}

# Alive and not a zombie.
alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n $st && $st != Z* ]]
}

children() { ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' || true; }
child_comms() { ps -o comm= --ppid "$1" 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//' || true; }

# probe URL [CURL_ARGS...]: sets CODE (the status, 000 without a response) and CURL_RC.
probe() {
  local url=$1
  shift
  CURL_RC=0
  CODE=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url") || CURL_RC=$?
}
# http_code URL [CURL_ARGS...]: prints the status code.
http_code() {
  probe "$@"
  echo "$CODE"
}
refused() {  # refused URL: the connection is refused (nothing listens)
  probe "$1"
  [[ $CODE == 000 && $CURL_RC -eq 7 ]]
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $((10#$t / 1000)); }

wait_for() {  # wait_for SECONDS COMMAND...: polls every 20 ms until COMMAND succeeds
  local end=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    (($(now_ms) < end)) || return 1
    sleep 0.02
  done
}

is_code() { [[ $(http_code "$1") == "$2" ]]; }
dead() { ! alive "$1"; }
n_children() { [[ $(children "$1" | wc -l) -eq $2 ]]; }
log_has() { grep -q -- "$2" "$TMP/$1.log"; }  # log_has NAME REGEX: $TMP/NAME.log matches

# wait_exit PID SECONDS: waits for the process to end, sets RC to its status.
wait_exit() {
  wait_for "$2" dead "$1" || fail "pid $1 still alive after $2 s"
  RC=0
  wait "$1" || RC=$?
}

# all_gone PIDS...: every listed process is gone (or a zombie) within 2 s.
all_gone() {
  local p
  for p in "$@"; do
    wait_for 2 dead "$p" || fail "process $p ($(ps -o comm= -p "$p")) outlived its parent"
  done
}

# stop_engine PID SECONDS: SIGTERM to a fake engine; it exits within SECONDS
# (RC: its status) and its EngineCores go with it.
stop_engine() {
  local kids
  kids=$(children "$1")
  kill -TERM "$1"
  wait_exit "$1" "$2"
  # shellcheck disable=SC2086
  all_gone $kids
}

# end_quietly PIDS...: SIGTERM to background clients started with `start`,
# reaped without bash's "Terminated" notice on stderr.
end_quietly() {
  local p
  exec 2>/dev/null
  kill -TERM "$@"
  for p in "$@"; do wait_exit "$p" 2; done
  exec 2>&9
}

pyjson() {  # pyjson FILE EXPR [ARGS...]: EXPR over d (the JSON) and args must be true
  local file=$1 expr=$2
  shift 2
  python3 - "$file" "$expr" "$@" <<'EOF' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
args = sys.argv[3:]
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}

VLLM=$BIN/vllm
ROUTER=$BIN/vllm-router
CLIENT=$BIN/ix-fake-client
mkdir -p "$TMP/rec"
export FAKE_VLLM_RECORD_DIR=$TMP/rec  # every fake engine records here, not in the working directory

# ---------------------------------------------------------------- readiness
E=$(free_port)
ARGV=("$VLLM" serve /models/test --served-model-name test-model --host 127.0.0.1 --port "$E"
      --data-parallel-size 4 --enable-expert-parallel --engram-config '{"cpu_offload":true}'
      --max-model-len 1048576 --disable-uvicorn-access-log --enable-prompt-tokens-details)
start engine FAKE_VLLM_START_DELAY_S=1.5 X_MARK=fakes-test "${ARGV[@]}"
ENGINE=$PID
wait_for 2 n_children "$ENGINE" 4 || fail "no 4 EngineCore children: $(child_comms "$ENGINE")"
[[ $(child_comms "$ENGINE") == "EngineCore_DP0 EngineCore_DP1 EngineCore_DP2 EngineCore_DP3" ]] ||
  fail "EngineCore names: $(child_comms "$ENGINE")"
ok "--data-parallel-size 4 forks EngineCore_DP0..3"
refused "http://127.0.0.1:$E/health" || fail "expected connection refused before ready, got $CODE (curl $CURL_RC)"
ok "connection refused before ready"
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "/health never 200"
ok "/health 200 once ready"
curl -s "http://127.0.0.1:$E/v1/models" >"$TMP/models.json"
pyjson "$TMP/models.json" 'd["object"] == "list" and d["data"][0]["id"] == "test-model" and d["data"][0]["owned_by"] == "vllm" and d["data"][0]["max_model_len"] == 1048576' ||
  fail "/v1/models: $(cat "$TMP/models.json")"
ok "/v1/models lists the served model name"
REC=$TMP/rec/vllm-$ENGINE.json
[[ -f $REC ]] || fail "no record $REC"
pyjson "$REC" 'd["argv"] == args and d["pid"] == int(d["pid"]) and d["env"].get("X_MARK") == "fakes-test" and len(d["engine_cores"]) == 4' "${ARGV[@]}" ||
  fail "record $REC does not hold the exact argv/env"
ok "argv (exactly as given) and environment recorded"

curl -s -D "$TMP/h.txt" -H 'X-data-parallel-rank: 2' "http://127.0.0.1:$E/v1/chat/completions" \
  -d '{"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":5}' >"$TMP/chat.json"
grep -qi '^X-Served-By-Rank: 2' "$TMP/h.txt" || fail "no X-Served-By-Rank: 2 header"
pyjson "$TMP/chat.json" 'd["served_by_rank"] == 2 and d["object"] == "chat.completion" and d["usage"]["completion_tokens"] == len(d["choices"][0]["message"]["content"].split())' ||
  fail "chat completion: $(cat "$TMP/chat.json")"
curl -s -N "http://127.0.0.1:$E/v1/completions" -d '{"prompt":"hello there","stream":true}' >"$TMP/sse.txt"
python3 - "$TMP/sse.txt" <<'EOF' || fail "completion stream: $(head -c 600 "$TMP/sse.txt")"
import json, sys
events = [e for e in open(sys.argv[1]).read().split("\n\n") if e]
assert events[-1] == "data: [DONE]", events[-1]
chunks = [json.loads(e[len("data: "):]) for e in events[:-1]]
assert all(c["served_by_rank"] == 0 for c in chunks)
assert chunks[-1]["usage"]["completion_tokens"] > 0
assert "".join(c["choices"][0]["text"] for c in chunks if c["choices"]).strip()
EOF
[[ $(http_code "http://127.0.0.1:$E/v1/chat/completions" -H 'X-data-parallel-rank: 9' -d '{"messages":[{"role":"user","content":"x"}]}') == 400 ]] ||
  fail "rank 9 of 4 should be 400, got $CODE"
[[ $(http_code "http://127.0.0.1:$E/v1/chat/completions" -d '{"model":"other","messages":[{"role":"user","content":"x"}]}') == 404 ]] ||
  fail "unknown model should be 404, got $CODE"
ok "completions (plain and SSE) say which rank served them"
curl -s "http://127.0.0.1:$E/metrics" >"$TMP/metrics.txt"
for m in 'vllm:num_requests_running{engine="3",model_name="test-model"}' 'vllm:generation_tokens_total{' \
         'vllm:prompt_tokens_total{' 'vllm:e2e_request_latency_seconds_count{engine="2"' 'vllm:num_requests_waiting{'; do
  grep -qF "$m" "$TMP/metrics.txt" || fail "/metrics lacks $m"
done
ok "/metrics has vllm: names"

# KV cache (README "KV cache"): one 304-token message (19 blocks of 16), then
# a second turn on the same rank hits all 19 blocks; on another rank it misses.
LONG=$(seq -s ' ' 1 300)
TURN1='{"messages":[{"role":"user","content":"'$LONG'"}],"max_tokens":4}'
TURN2='{"messages":[{"role":"user","content":"'$LONG'"},{"role":"assistant","content":"ok"},{"role":"user","content":"next"}],"max_tokens":4}'
cached() {  # cached PORT RANK BODY: the answer's usage.prompt_tokens_details.cached_tokens
  curl -s -H "X-data-parallel-rank: $2" "http://127.0.0.1:$1/v1/chat/completions" -d "$3" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"]["prompt_tokens_details"]["cached_tokens"])'
}
[[ $(cached "$E" 1 "$TURN1") == 0 && $(cached "$E" 1 "$TURN2") == 304 && $(cached "$E" 3 "$TURN2") == 0 ]] ||
  fail "prefix cache: cached_tokens $(cached "$E" 1 "$TURN2") on the same rank, $(cached "$E" 3 "$TURN2") on another"
curl -s "http://127.0.0.1:$E/metrics" >"$TMP/metrics.txt"
for m in 'vllm:prefix_cache_hits_total{engine="1",model_name="test-model"} 304.0' \
         'vllm:prefix_cache_queries_total{engine="1",model_name="test-model"} 618.0' \
         'vllm:prefix_cache_hits_total{engine="3",model_name="test-model"} 0.0' \
         'vllm:prompt_tokens_by_source_total{engine="1",model_name="test-model",source="local_cache_hit"} 304.0' \
         'vllm:prompt_tokens_by_source_total{engine="1",model_name="test-model",source="local_compute"} 314.0' \
         'vllm:kv_cache_usage_perc{engine="1",model_name="test-model"} 0.000000'; do
  grep -qF "$m" "$TMP/metrics.txt" || fail "/metrics lacks $m"
done
! grep -q 'kv_offload\|external_prefix' "$TMP/metrics.txt" || fail "/metrics has offload series without a tier"
[[ $(grep -c 'GPU KV cache size: 327,680 tokens' "$TMP/engine.log") -eq 4 ]] &&
  grep -q '(EngineCore_DP3 pid=[0-9]*) INFO .*GPU KV cache size' "$TMP/engine.log" ||
  fail "no capacity line per EngineCore: $(grep 'KV cache size' "$TMP/engine.log")"
ok "prefix cache per rank: a second turn hits on its rank, misses on another; capacity logged per EngineCore"
# A 24-block GPU cache and a 1 GiB CPU tier: another prompt evicts most of
# TURN1's blocks to the CPU, and TURN2 loads them back (external hits).
E2=$(free_port)
start tier "$VLLM" serve /m --host 127.0.0.1 --port "$E2" --num-gpu-blocks-override 24 --enable-prompt-tokens-details \
  --kv-transfer-config '{"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1073741824}}'
TIER=$PID
wait_for 5 is_code "http://127.0.0.1:$E2/health" 200 || fail "offload tier: never ready"
OTHER='{"messages":[{"role":"user","content":"'$(seq -s ' ' 1001 1300)'"}],"max_tokens":4}'
[[ $(cached "$E2" 0 "$TURN1") == 0 && $(cached "$E2" 0 "$OTHER") == 0 && $(cached "$E2" 0 "$TURN2") == 304 ]] ||
  fail "offload tier: TURN2 cached $(cached "$E2" 0 "$TURN2")"
curl -s "http://127.0.0.1:$E2/metrics" >"$TMP/tier.txt"
python3 - "$TMP/tier.txt" <<'EOF' || fail "offload tier metrics: $(grep -E 'external|offload|cpu_kv|prefix_cache' "$TMP/tier.txt")"
import re, sys
v = {m[0]: float(m[1]) for m in re.findall(r'^(vllm:[a-z_]+)\{engine="0"[^}]*\} (\S+)$', open(sys.argv[1]).read(), re.M)}
assert v["vllm:external_prefix_cache_hits_total"] > 0 and v["vllm:prefix_cache_hits_total"] > 0, v
assert v["vllm:external_prefix_cache_hits_total"] + v["vllm:prefix_cache_hits_total"] == 304, v
assert v["vllm:kv_offload_bytes_cpu_to_gpu_total"] == v["vllm:external_prefix_cache_hits_total"] * 65536, v
assert v["vllm:kv_offload_bytes_gpu_to_cpu_total"] > 0 and v["vllm:kv_offload_time_cpu_to_gpu_total"] > 0, v
assert 0 < v["vllm:cpu_kv_cache_usage_perc"] < 1 and v["vllm:external_prefix_cache_queries_total"] == 3 * 304 + 10, v
EOF
stop_engine "$TIER" 3
RC=0
"$VLLM" serve /m --port 0 --kv-transfer-config '{"kv_connector":"FooConnector","kv_role":"kv_both"}' >/dev/null 2>"$TMP/kvt.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "Unsupported connector type: FooConnector" "$TMP/kvt.txt" || fail "unknown connector: rc $RC, $(cat "$TMP/kvt.txt")"
ok "offload tier: evicted blocks come back from the CPU as external hits, with bytes; an unknown connector exits 2"

start dup "$VLLM" serve /m --host 127.0.0.1 --port "$E"
wait_exit "$PID" 3
[[ $RC -eq 1 ]] || fail "a second server on port $E exited $RC, expected 1"
ok "a second server on a taken port exits 1 at once"

KIDS=$(children "$ENGINE")
T0=$(now_ms)
kill -TERM "$ENGINE"
wait_exit "$ENGINE" 3
[[ $RC -eq 0 ]] || fail "SIGTERM: exit status $RC"
# shellcheck disable=SC2086
all_gone $KIDS
ok "SIGTERM stops the server and its EngineCores in $(($(now_ms) - T0)) ms"

# ------------------------------------------------------------------- faults
E=$(free_port)
start crash FAKE_VLLM_CRASH_ENGINE_AFTER_S=0.3 "$VLLM" serve /m --host 127.0.0.1 --port "$E" --data-parallel-size 4
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "crash: never ready"
wait_for 3 n_children "$ENGINE" 3 || fail "crash: still $(children "$ENGINE" | wc -l) EngineCores"
[[ $(child_comms "$ENGINE") == "EngineCore_DP0 EngineCore_DP1 EngineCore_DP2" ]] || fail "crash: $(child_comms "$ENGINE")"
grep -q 'EngineCore_DP3 (pid [0-9]*) died unexpectedly: exit status 1' "$TMP/crash.log" || fail "crash: no exit status 1 logged"
[[ $(http_code "http://127.0.0.1:$E/health") == 200 ]] || fail "crash: /health $CODE, expected the bug (200)"
[[ $(http_code "http://127.0.0.1:$E/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}]}') == 200 ]] ||
  fail "crash: completion $CODE"
alive "$ENGINE" || fail "crash: the API server died"
ok "FAKE_VLLM_CRASH_ENGINE_AFTER_S: EngineCore_DP3 exits 1, /health still 200"
stop_engine "$ENGINE" 3

E=$(free_port)
# 1.5 s: time enough, on a loaded machine, to see it ready and count its children first.
start exit0 FAKE_VLLM_EXIT0_AFTER_S=1.5 "$VLLM" serve /m --host 127.0.0.1 --port "$E" -dp 2
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "exit0: never ready"
KIDS=$(children "$ENGINE")
[[ $(echo "$KIDS" | wc -w) -eq 2 ]] || fail "exit0: -dp 2 gave $(child_comms "$ENGINE")"
wait_exit "$ENGINE" 3
[[ $RC -eq 0 ]] || fail "exit0: status $RC"
# shellcheck disable=SC2086
all_gone $KIDS
ok "FAKE_VLLM_EXIT0_AFTER_S: the API server exits 0 and takes its EngineCores"

E=$(free_port)
start hang FAKE_VLLM_HANG_AFTER_S=0.3 "$VLLM" serve /m --host 127.0.0.1 --port "$E"
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "hang: never ready"
sleep 0.4
CURL_RC=0
curl -s -o /dev/null --max-time 0.5 "http://127.0.0.1:$E/health" || CURL_RC=$?
[[ $CURL_RC -eq 28 ]] || fail "hang: /health did not time out (curl $CURL_RC)"
alive "$ENGINE" || fail "hang: the process died"
stop_engine "$ENGINE" 2
ok "FAKE_VLLM_HANG_AFTER_S: requests block, the process lives, SIGTERM still stops it"

# Stalls (README "Fault switches"): token generation stops on one rank or on
# all, their requests stay running and their counters freeze; /metrics and
# /health answer unless the API server is wedged too.
metric() {  # metric FILE NAME RANK: the value of NAME{engine="RANK",...} in a /metrics text
  sed -n "s/^$2{engine=\"$3\",[^}]*} //p" "$TMP/$1" | head -1
}
scrape() { curl -s --max-time 2 "http://127.0.0.1:$1/metrics" >"$TMP/$2"; }  # scrape PORT FILE
more() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > a) }'; }  # more A B: B > A (numbers)
size() { stat -c %s "$TMP/$1.log"; }
# times_out PATH RANK [CURL_ARGS...]: the engine at $E accepts and never answers within 0.5 s.
times_out() {
  local rc=0
  curl -s -o /dev/null --max-time 0.5 -H "X-data-parallel-rank: $2" "${@:3}" "http://127.0.0.1:$E$1" || rc=$?
  [[ $rc -eq 28 ]]
}
COMPLETE=(-d '{"prompt":"x","max_tokens":2}')
LONG_STREAM='{"prompt":"a long answer","max_tokens":2000,"ignore_eos":true,"stream":true}'  # 40 s at 20 ms a token
E=$(free_port)
start stall FAKE_VLLM_STALL_AFTER_S=1.5 FAKE_VLLM_STALL_RANK=1 FAKE_VLLM_TOKEN_DELAY_MS=20 \
  "$VLLM" serve /m --served-model-name m --host 127.0.0.1 --port "$E" -dp 2
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "stall: never ready"
start stream0 curl -s -N -H 'X-data-parallel-rank: 0' "http://127.0.0.1:$E/v1/completions" -d "$LONG_STREAM"
S0=$PID
start stream1 curl -s -N -H 'X-data-parallel-rank: 1' "http://127.0.0.1:$E/v1/completions" -d "$LONG_STREAM"
S1=$PID
wait_for 5 log_has stall "token generation stops on data-parallel ranks \[1\]" || fail "stall: not logged"
sleep 0.3
scrape "$E" stall-a.txt
A0=$(size stream0) A1=$(size stream1)
sleep 1
scrape "$E" stall-b.txt
B0=$(size stream0) B1=$(size stream1)
for m in vllm:generation_tokens_total vllm:prompt_tokens_total; do
  X=$(metric stall-a.txt "$m" 1) Y=$(metric stall-b.txt "$m" 1)
  [[ $X == "$Y" ]] && more 0 "$X" || fail "stall: rank 1's $m moved or stayed 0: $X -> $Y"
done
[[ $(metric stall-b.txt vllm:num_requests_running 1) == 1.0 && $A1 -eq $B1 && $A1 -gt 0 ]] ||
  fail "stall: rank 1 running $(metric stall-b.txt vllm:num_requests_running 1), its stream $A1 -> $B1 bytes"
more "$(metric stall-a.txt vllm:generation_tokens_total 0)" "$(metric stall-b.txt vllm:generation_tokens_total 0)" &&
  ((B0 > A0)) || fail "stall: rank 0 stopped too (stream $A0 -> $B0 bytes)"
times_out /v1/completions 1 "${COMPLETE[@]}" || fail "stall: a new request on rank 1 was answered"
[[ $(http_code "http://127.0.0.1:$E/v1/completions" -H 'X-data-parallel-rank: 0' "${COMPLETE[@]}") == 200 ]] ||
  fail "stall: a new request on rank 0: $CODE"
scrape "$E" stall-c.txt
[[ $(metric stall-c.txt vllm:num_requests_running 1) == 2.0 &&
   $(metric stall-c.txt vllm:generation_tokens_total 1) == "$(metric stall-b.txt vllm:generation_tokens_total 1)" ]] ||
  fail "stall: the new request on rank 1 is not running, or rank 1's tokens moved"
is_code "http://127.0.0.1:$E/health" 200 && alive "$ENGINE" && n_children "$ENGINE" 2 ||
  fail "stall: /health $CODE, or the API server or an EngineCore died"
end_quietly "$S0" "$S1"
stop_engine "$ENGINE" 3
ok "FAKE_VLLM_STALL_AFTER_S + STALL_RANK=1: rank 1's streams and counters freeze with its requests running; rank 0 serves on; /health and /metrics answer"

E=$(free_port)
start stallall FAKE_VLLM_STALL_AFTER_S=0.2 "$VLLM" serve /m --host 127.0.0.1 --port "$E" -dp 2
ENGINE=$PID
wait_for 5 log_has stallall "token generation stops on data-parallel ranks \[0,1\]" || fail "stall (every rank): not logged"
times_out /v1/completions 0 "${COMPLETE[@]}" && times_out /v1/chat/completions 1 \
  -d '{"messages":[{"role":"user","content":"x"}],"stream":true}' || fail "stall (every rank): a request was answered"
scrape "$E" stallall.txt
[[ $(metric stallall.txt vllm:num_requests_running 0) == 1.0 && $(metric stallall.txt vllm:num_requests_running 1) == 1.0 &&
   $(metric stallall.txt vllm:prompt_tokens_total 1) == 0.0 ]] && is_code "http://127.0.0.1:$E/health" 200 ||
  fail "stall (every rank): $(grep '^vllm:num_requests_running' "$TMP/stallall.txt"), /health $CODE"
stop_engine "$ENGINE" 3
ok "FAKE_VLLM_STALL_AFTER_S alone: every rank holds its new requests (running, no prompt counted); /health answers"

E=$(free_port)
start wedge FAKE_VLLM_STALL_AFTER_S=1 FAKE_VLLM_STALL_METRICS=1 FAKE_VLLM_TOKEN_DELAY_MS=20 \
  "$VLLM" serve /m --host 127.0.0.1 --port "$E" -dp 2
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "wedge: never ready"
start wstream curl -s -N -H 'X-data-parallel-rank: 1' "http://127.0.0.1:$E/v1/completions" -d "$LONG_STREAM"
WS=$PID
wait_for 5 log_has wedge "the API server's event loop is wedged" || fail "wedge: not logged"
sleep 0.2
A1=$(size wstream)
times_out /metrics 0 && times_out /health 0 || fail "wedge: /metrics or /health answered (or refused)"
B1=$(size wstream)
[[ $A1 -eq $B1 && $A1 -gt 0 ]] && alive "$ENGINE" && n_children "$ENGINE" 2 ||
  fail "wedge: the stream went $A1 -> $B1 bytes, or a process died"
end_quietly "$WS"
stop_engine "$ENGINE" 3
ok "FAKE_VLLM_STALL_METRICS=1: from the stall on /metrics and /health accept and never answer, streams stop; SIGTERM still stops it"

RC=0
FAKE_VLLM_STALL_AFTER_S=1 FAKE_VLLM_STALL_RANK=2 "$VLLM" serve /m --port 0 -dp 2 >/dev/null 2>"$TMP/stallbad.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "FAKE_VLLM_STALL_RANK='2': expected a data-parallel rank below --data-parallel-size" "$TMP/stallbad.txt" ||
  fail "STALL_RANK=2 of 2: rc $RC, $(cat "$TMP/stallbad.txt")"
RC=0
FAKE_VLLM_STALL_METRICS=1 "$VLLM" serve /m --port 0 >/dev/null 2>"$TMP/stallbad.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "FAKE_VLLM_STALL_METRICS='1': expected FAKE_VLLM_STALL_AFTER_S to be set too" "$TMP/stallbad.txt" ||
  fail "STALL_METRICS without STALL_AFTER_S: rc $RC, $(cat "$TMP/stallbad.txt")"
ok "a stall rank out of range, or STALL_METRICS without STALL_AFTER_S, exits 2 naming the variable"

E=$(free_port)
start never FAKE_VLLM_NEVER_READY=1 "$VLLM" serve /m --host 127.0.0.1 --port "$E" -dp 2
ENGINE=$PID
sleep 0.5
refused "http://127.0.0.1:$E/health" || fail "never ready: got $CODE (curl $CURL_RC)"
alive "$ENGINE" && n_children "$ENGINE" 2 || fail "never ready: process or EngineCores missing"
stop_engine "$ENGINE" 2
ok "FAKE_VLLM_NEVER_READY: refused forever, SIGTERM stops it"

E=$(free_port)
start killed "$VLLM" serve /m --host 127.0.0.1 --port "$E" -dp 3
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "kill -9: never ready"
KIDS=$(children "$ENGINE")
exec 2>/dev/null  # bash reports the SIGKILLed job ("Killed") on stderr
kill -KILL "$ENGINE"
wait_exit "$ENGINE" 2
# shellcheck disable=SC2086
all_gone $KIDS
exec 2>&9
ok "SIGKILL of the API server takes its EngineCores along (PR_SET_PDEATHSIG)"

E=$(free_port)
start onlyif FAKE_VLLM_NEVER_READY=1 FAKE_VLLM_FAULT_ONLY_IF_ARG=512 \
  "$VLLM" serve /m --host 127.0.0.1 --port "$E" --max-cudagraph-capture-size 256
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "FAULT_ONLY_IF_ARG: a non-matching argv must become ready"
[[ $(child_comms "$ENGINE") == "EngineCore_DP0" ]] || fail "dp 1: $(child_comms "$ENGINE")"
kill -TERM "$ENGINE"
wait_exit "$ENGINE" 2
E=$(free_port)
start onlyif2 FAKE_VLLM_NEVER_READY=1 FAKE_VLLM_FAULT_ONLY_IF_ARG=512 \
  "$VLLM" serve /m --host 127.0.0.1 --port "$E" --max-cudagraph-capture-size 512
ENGINE=$PID
sleep 0.3
refused "http://127.0.0.1:$E/health" || fail "FAULT_ONLY_IF_ARG: a matching argv must never be ready"
kill -TERM "$ENGINE"
wait_exit "$ENGINE" 2
ok "FAKE_VLLM_FAULT_ONLY_IF_ARG picks the matrix entry; DP 1 still has EngineCore_DP0"

# ------------------------------------------- lengths, ignore_eos and load
RC=0
FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS=abc "$VLLM" serve /m --port 0 >/dev/null 2>"$TMP/knob.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS='abc': expected milliseconds" "$TMP/knob.txt" ||
  fail "a bad latency knob: rc $RC, $(cat "$TMP/knob.txt")"
RC=0
FAKE_VLLM_PREFILL_MS_PER_1K=-1 "$VLLM" serve /m --port 0 >/dev/null 2>"$TMP/knob.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "FAKE_VLLM_PREFILL_MS_PER_1K" "$TMP/knob.txt" || fail "a negative prefill knob: rc $RC"
ok "a bad latency knob exits 2 naming the variable"
E=$(free_port)
start load FAKE_VLLM_TOKEN_DELAY_MS=0.2 FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS=0.2 FAKE_VLLM_PREFILL_MS_PER_1K=5 \
  "$VLLM" serve /models/len --served-model-name len-model --host 127.0.0.1 --port "$E" --max-model-len 4096
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "load: never ready"
curl -s "http://127.0.0.1:$E/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":50,"ignore_eos":true}' >"$TMP/eos.json"
pyjson "$TMP/eos.json" 'd["usage"]["completion_tokens"] == 50 == len(d["choices"][0]["message"]["content"].split()) and d["choices"][0]["finish_reason"] == "length"' ||
  fail "ignore_eos: $(head -c 300 "$TMP/eos.json")"
[[ $(http_code "http://127.0.0.1:$E/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"ignore_eos":"yes"}') == 400 ]] ||
  fail "ignore_eos not a boolean: $CODE"
[[ $(http_code "http://127.0.0.1:$E/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":4095}') == 400 ]] ||
  fail "a prompt and completion over --max-model-len: $CODE"
ok "ignore_eos: exactly max_tokens tokens; more than --max-model-len is a 400, as in vLLM"
RC=0
ISL=1024 IX_ENDPOINT="http://127.0.0.1:$E" "$CLIENT" --out "$TMP/r.json" >/dev/null 2>"$TMP/isl.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "OSL is not set" "$TMP/isl.txt" || fail "ISL without OSL: rc $RC, $(head -1 "$TMP/isl.txt")"
RC=0
ISL=8 OSL=8 RANDOM_RANGE_RATIO=2 IX_ENDPOINT="http://127.0.0.1:$E" "$CLIENT" --out "$TMP/r.json" >/dev/null 2>"$TMP/isl.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "RANDOM_RANGE_RATIO='2' is not a number from 0 to 1" "$TMP/isl.txt" || fail "RANDOM_RANGE_RATIO=2: rc $RC"
ok "the client refuses ISL without OSL and a range ratio above 1"
mkdir -p "$TMP/len" "$TMP/cwd"
ISL=1024 OSL=1024 RESULT_FILENAME=x IX_RESULT_DIR="$TMP/len" CONC=1 IX_ENDPOINT="http://127.0.0.1:$E" \
  "$CLIENT" --sessions 2 --turns 2 >"$TMP/len1.log" 2>&1 || fail "client with ISL/OSL: $(cat "$TMP/len1.log")"
[[ -f $TMP/len/x.json ]] || fail "RESULT_FILENAME=x with IX_RESULT_DIR: no $TMP/len/x.json ($(ls "$TMP/len"))"
python3 - "$TMP/len/x.json" <<'PY' || fail "the ISL/OSL result is not benchmark_serving.py's: $(head -c 1500 "$TMP/len/x.json")"
import json, re, sys
d = json.load(open(sys.argv[1]))
# save_result's keys, then benchmark()'s (InferenceX's flags, no --save-detailed), in order.
real = ["date", "backend", "model_id", "tokenizer_id", "best_of", "num_prompts", "request_rate", "burstiness",
        "max_concurrency", "duration", "benchmark_start_time_unix", "benchmark_end_time_unix", "completed",
        "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput:", "output_throughput",
        "total_token_throughput", "input_lens", "output_lens"]
real += [f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("mean", "median", "std", "p90", "p99", "p99.9")]
keys = list(d)
assert keys[:len(real)] == real, keys[:len(real)]
assert not [k for k in keys[len(real):] if k.endswith("ms") or "tpot" in k], keys[len(real):]
assert re.fullmatch(r"\d{8}-\d{6}", d["date"]) and d["backend"] == "openai-chat"
assert d["model_id"] == d["tokenizer_id"] == "len-model" and d["best_of"] == 1 and d["num_prompts"] == 4
assert d["request_rate"] == "inf" and d["burstiness"] == 1.0 and type(d["burstiness"]) is float
assert d["max_concurrency"] == 1 and d["request_goodput:"] is None  # CONC=1
for k in ("max_concurrency", "completed", "total_input_tokens", "total_output_tokens"):
    assert type(d[k]) is int, k
assert all(type(x) is int for x in d["input_lens"] + d["output_lens"])
assert all(type(d[k]) is float for k in real[21:]), [k for k in real[21:] if type(d[k]) is not float]
# numpy's draws for seed 0, ratio 0.8: np.random.seed(0); randint(819, 1025, size=4), twice.
assert d["input_lens"] == [991, 866, 936, 1011] and d["output_lens"] == [886, 1014, 922, 828], (d["input_lens"], d["output_lens"])
assert all(int(1024 * 0.8) <= n <= 1024 for n in d["input_lens"] + d["output_lens"])
reqs = d["requests"]
assert d["completed"] == len(reqs) == 4 and not [r for r in reqs if "error" in r]
assert d["total_input_tokens"] == sum(d["input_lens"]) == sum(r["prompt_tokens"] for r in reqs)
assert d["total_output_tokens"] == sum(d["output_lens"]) == sum(r["completion_tokens"] for r in reqs)
assert [r["prompt_tokens"] for r in reqs] == d["input_lens"] and [r["completion_tokens"] for r in reqs] == d["output_lens"]
assert d["lengths"] == {"isl": 1024, "osl": 1024, "range_ratio": 0.8, "seed": 0}
assert d["summary"]["sessions_on_one_rank"] and d["mean_tpot_ms"] > 0
PY
ok "ISL=OSL=1024 RESULT_FILENAME=x: x.json has benchmark_serving.py's keys in its order, numpy's lengths, the engine's usage"
(cd "$TMP/cwd" && ISL=1024 OSL=1024 RESULT_FILENAME=x IX_ENDPOINT="http://127.0.0.1:$E" \
  "$CLIENT" --sessions 8 --turns 1 --concurrency 8 >"$TMP/len8.log" 2>&1) || fail "client at conc 8: $(cat "$TMP/len8.log")"
[[ -f $TMP/cwd/x.json ]] || fail "RESULT_FILENAME=x without IX_RESULT_DIR: no ./x.json"
TPOTS=$(python3 - "$TMP/len/x.json" "$TMP/cwd/x.json" <<'PY'
import json, sys
one, eight = (json.load(open(f)) for f in sys.argv[1:])
assert eight["max_concurrency"] == 8 and eight["completed"] == 8
# 0.2 ms + 0.2 ms per other sequence: 0.2 ms alone, 1.6 ms with 8 running.
assert eight["mean_tpot_ms"] > 2 * one["mean_tpot_ms"], (one["mean_tpot_ms"], eight["mean_tpot_ms"])
print(f"{one['mean_tpot_ms']:.2f} ms at conc 1, {eight['mean_tpot_ms']:.2f} ms at conc 8")
PY
) || fail "TPOT does not grow with load"
ok "FAKE_VLLM_TOKEN_DELAY_PER_SEQ_MS: TPOT grows with load: $TPOTS"
stop_engine "$ENGINE" 3

# ------------------------------------------- benchmark_serving.py's command
# InferenceX's run_benchmark_serving command line, through the stand-in of its
# checkout (tests/fakes/inferencex-workspace), against the fake engine.
WS=$(cd "$(dirname "$0")" && pwd)/inferencex-workspace
BS=$WS/utils/bench_serving/benchmark_serving.py
E=$(free_port)
start bs "$VLLM" serve /models/bs --served-model-name bs-model --host 127.0.0.1 --port "$E" --max-model-len 4096
ENGINE=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "bs: never ready"
RC=0
PATH="$BIN:$PATH" python3 "$BS" --model bs-model --dataset-name random --num-prompt 3 >/dev/null 2>"$TMP/bs-usage.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "error: unrecognized arguments: --num-prompt" "$TMP/bs-usage.txt" ||
  fail "an unknown benchmark_serving.py flag: rc $RC, $(tail -1 "$TMP/bs-usage.txt")"
ok "benchmark_serving.py stand-in: an unknown flag exits 2 naming it"
mkdir -p "$TMP/bs"
BS_ARGV=(python3 "$BS" --model bs-model --backend vllm --base-url "http://0.0.0.0:$E" --dataset-name random
         --random-input-len 256 --random-output-len 64 --random-range-ratio 0.8 --num-prompts 10 --max-concurrency 4
         --request-rate inf --ignore-eos --save-result --num-warmups 8 --percentile-metrics 'ttft,tpot,itl,e2el'
         --result-dir "$TMP/bs" --result-filename bs_run.json)
PATH="$BIN:$PATH" "${BS_ARGV[@]}" >"$TMP/bs1.log" 2>&1 || fail "benchmark_serving.py stand-in: $(tail -5 "$TMP/bs1.log")"
# The sessions mode with InferenceX's variables draws the same lengths for the same seed.
ISL=256 OSL=64 RANDOM_RANGE_RATIO=0.8 IX_ENDPOINT="http://127.0.0.1:$E" \
  "$CLIENT" --sessions 10 --turns 1 --concurrency 4 --out "$TMP/bs/sessions.json" >"$TMP/bs2.log" 2>&1 ||
  fail "client with ISL=256: $(tail -3 "$TMP/bs2.log")"
curl -s "http://127.0.0.1:$E/metrics" >"$TMP/bs-metrics.txt"
python3 - "$TMP/bs/bs_run.json" "$TMP/bs/sessions.json" "$TMP/bs-metrics.txt" <<'PY' || fail "benchmark_serving.py's result: $(head -c 1500 "$TMP/bs/bs_run.json")"
import json, re, sys
d, s = (json.load(open(f)) for f in sys.argv[1:3])
assert d["num_prompts"] == d["completed"] == 10 == len(d["input_lens"]), (d["num_prompts"], d["completed"])
assert d["backend"] == "vllm" and d["model_id"] == d["tokenizer_id"] == "bs-model" and d["max_concurrency"] == 4
assert d["x_session_id_header"] is False and d["turns"] == 1 and not [r for r in d["requests"] if "error" in r]
assert d["input_lens"] == s["input_lens"] and d["output_lens"] == s["output_lens"], (d["input_lens"], s["input_lens"])
assert [r["prompt_tokens"] for r in d["requests"]] == d["input_lens"]
assert [r["max_tokens"] for r in d["requests"]] == d["output_lens"]  # --ignore-eos: exactly the drawn length
assert all(204 <= n <= 256 for n in d["input_lens"]) and all(51 <= n <= 64 for n in d["output_lens"])
# 10 counted, 8 warmups (--num-warmups), 10 from the sessions run: all finished by length (ignore_eos).
done = sum(float(v) for v in re.findall(r'^vllm:request_success_total\{.*finished_reason="length".*\} (\S+)$',
                                        open(sys.argv[3]).read(), re.M))
assert done == 28, done
PY
ok "InferenceX's benchmark_serving.py command line (stand-in): num_prompts = completed = 10, 8 warmups, numpy's lengths"
# Every optional flag run_benchmark_serving may add; no --result-filename: benchmark_serving.py's default name.
PATH="$BIN:$PATH" "${BS_ARGV[@]:0:${#BS_ARGV[@]}-2}" --profile --endpoint /v1/completions --use-chat-template --dsv4 \
  --trust-remote-code --tokenizer /tok --tokenizer-mode auto --percentile-metrics e2el >"$TMP/bs3.log" 2>&1 ||
  fail "benchmark_serving.py with every optional flag: $(tail -5 "$TMP/bs3.log")"
grep -q "start_profile: " "$TMP/bs3.log" && grep -q "stop_profile: " "$TMP/bs3.log" || fail "--profile: no profiler calls"
RESULT=$(ls "$TMP"/bs/vllm-infqps-concurrency4-bs-model-*.json 2>/dev/null | head -1)
[[ -n $RESULT ]] || fail "no default-named result in $TMP/bs: $(ls "$TMP/bs")"
pyjson "$RESULT" 'd["tokenizer_id"] == "/tok" and d["completed"] == 10 and "mean_e2el_ms" in d and not [k for k in d if k.endswith("ttft_ms") or "tpot" in k]' ||
  fail "the default-named result: $(head -c 800 "$RESULT")"
ok "benchmark_serving.py with --profile, --endpoint, --dsv4, --tokenizer...: its default result name, --percentile-metrics e2el"
stop_engine "$ENGINE" 3

# ------------------------------------------------------- router and client
E=$(free_port)
P=$(free_port)
M=$(free_port)
start rengine "$VLLM" serve /models/test --served-model-name test-model --host 0.0.0.0 --port "$E" \
  --tensor-parallel-size 1 --data-parallel-size 4 --enable-expert-parallel
ENGINE=$PID
start router "$ROUTER" --worker-urls "http://localhost:$E" --policy consistent_hash --intra-node-data-parallel-size 4 \
  --host 0.0.0.0 --port "$P" --prometheus-host 127.0.0.1 --prometheus-port "$M" --request-timeout-secs 14400 \
  --disable-retries
ROUTER_PID=$PID
wait_for 5 is_code "http://127.0.0.1:$P/health" 200 || fail "router /health"
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "engine behind the router never ready"
IX_ENDPOINT="http://localhost:$P" IX_CONC=4 AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID=1 \
  "$CLIENT" --sessions 8 --turns 3 --out "$TMP/result.json" >"$TMP/client.log" 2>&1 || fail "client failed: $(cat "$TMP/client.log")"
pyjson "$TMP/result.json" 'd["summary"]["requests"] == 24 and d["summary"]["failed"] == 0 and d["summary"]["sessions_on_one_rank"] and len(d["summary"]["ranks_used"]) > 1 and all(r["status"] == 200 and r["ttft_ms"] <= r["latency_ms"] for r in d["requests"])' ||
  fail "affinity (stream): $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"])' "$TMP/result.json")"
# The result has benchmark_serving.py's fields, consistent by its rules.
python3 - "$TMP/result.json" <<'PY' || fail "the client's result lacks benchmark_serving.py's fields or breaks their rules"
import json, sys
d = json.load(open(sys.argv[1]))
for m in ("ttft", "tpot", "itl", "e2el"):
    for s in ("mean", "median", "std", "p99"):
        assert isinstance(d[f"{s}_{m}_ms"], float), (s, m)
    assert d[f"median_{m}_ms"] <= d[f"p99_{m}_ms"], m
ok = [r for r in d["requests"] if "error" not in r]
assert d["completed"] == len(ok) == 24
assert d["total_output_tokens"] == sum(r["completion_tokens"] for r in ok) > 0
assert abs(d["output_throughput"] - d["total_output_tokens"] / d["duration"]) < 1e-6 * d["output_throughput"]
assert abs(d["total_token_throughput"] * d["duration"] - d["total_input_tokens"] - d["total_output_tokens"]) < 1e-3
assert abs(d["mean_e2el_ms"] - sum(r["latency_ms"] for r in ok) / len(ok)) < 1e-6
assert d["mean_tpot_ms"] > 0 and d["p99_ttft_ms"] <= max(r["latency_ms"] for r in ok)
PY
ok "router: every turn of a session on one rank, sessions spread over ranks $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["ranks_used"])' "$TMP/result.json") (SSE)"
AIPERF_SERVER_URL="http://127.0.0.1:$P" "$CLIENT" --sessions 16 --turns 2 --concurrency 8 --no-stream --out "$TMP/result2.json" \
  >"$TMP/client2.log" 2>&1 || fail "client --no-stream failed: $(cat "$TMP/client2.log")"
pyjson "$TMP/result2.json" 'd["summary"]["requests"] == 32 and d["summary"]["sessions_on_one_rank"] and len(d["summary"]["ranks_used"]) > 1' ||
  fail "affinity (plain)"
ok "router: affinity holds without streaming too"
curl -s "http://127.0.0.1:$M/metrics" >"$TMP/rmetrics.txt"
grep -q '^vllm_router_requests_total{route="/v1/chat/completions"} 56$' "$TMP/rmetrics.txt" || fail "router metrics: $(head -5 "$TMP/rmetrics.txt")"
grep -qF "vllm_router_processed_requests_total{worker=\"http://localhost:$E@" "$TMP/rmetrics.txt" || fail "router per-worker metrics"
ok "router: Prometheus metrics on --prometheus-port"

RC=0
"$ROUTER" --worker-urls "http://localhost:$E" --policy consistent_hash --bogus-flag 1 >/dev/null 2>"$TMP/bad.txt" || RC=$?
[[ $RC -eq 2 ]] && grep -q "unexpected argument '--bogus-flag'" "$TMP/bad.txt" || fail "router unknown flag: rc $RC"
RC=0
"$ROUTER" --worker-urls "http://localhost:$E" --policy round_robin >/dev/null 2>&1 || RC=$?
[[ $RC -eq 2 ]] || fail "router --policy round_robin: rc $RC"
ok "router: unknown flags and policies exit 2"

stop_engine "$ENGINE" 3
RC=0
IX_ENDPOINT="http://127.0.0.1:$P" "$CLIENT" --model test-model --out "$TMP/result3.json" >"$TMP/client3.log" 2>"$TMP/client3.err" || RC=$?
[[ $RC -eq 1 ]] && grep -q "requests failed" "$TMP/client3.err" || fail "client against a dead engine: rc $RC"
pyjson "$TMP/result3.json" 'd["summary"]["failed"] >= 1 and d["requests"][0]["status"] == 502' || fail "client result for a dead engine"
ok "client exits 1 with a clear line when the server is gone: $(head -c 120 "$TMP/client3.err")"
kill -TERM "$ROUTER_PID"
wait_exit "$ROUTER_PID" 2
[[ $RC -eq 0 ]] && refused "http://127.0.0.1:$P/health" || fail "router SIGTERM: status $RC"
ok "router: SIGTERM stops it"

# The router stops forwarding: requests are held and counted as running at
# the router, none reaches the engine, /health answers.
E=$(free_port)
P=$(free_port)
M=$(free_port)
start sengine "$VLLM" serve /m --served-model-name m --host 127.0.0.1 --port "$E" -dp 2
ENGINE=$PID
start srouter FAKE_ROUTER_STALL_AFTER_S=2 "$ROUTER" --worker-urls "http://127.0.0.1:$E" --policy consistent_hash \
  --intra-node-data-parallel-size 2 --host 127.0.0.1 --port "$P" --prometheus-port "$M"
ROUTER_PID=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 && wait_for 5 is_code "http://127.0.0.1:$P/health" 200 ||
  fail "router stall: engine or router never ready"
[[ $(http_code "http://127.0.0.1:$P/v1/completions" "${COMPLETE[@]}") == 200 ]] || fail "router stall: $CODE before the stall"
router_running() {  # router_running N: the router's running gauges add up to N
  [[ $(curl -s "http://127.0.0.1:$M/metrics" | awk '/^vllm_router_running_requests\{/ { n += $2 } END { print n + 0 }') == "$1" ]]
}
router_running 0 || fail "router stall: requests running before any is held"
wait_for 5 log_has srouter "fault FAKE_ROUTER_STALL_AFTER_S" || fail "router stall: not logged"
SEEN=$(grep -c '"POST /v1/completions' "$TMP/sengine.log")
start held curl -s --max-time 30 -H 'X-Session-ID: held-1' "http://127.0.0.1:$P/v1/completions" "${COMPLETE[@]}"
HELD=$PID
wait_for 3 router_running 1 || fail "router stall: the held request is not running at the router"
sleep 0.3
scrape "$E" sengine.txt
[[ $(grep -c '"POST /v1/completions' "$TMP/sengine.log") -eq $SEEN && $(metric sengine.txt vllm:num_requests_running 0) == 0.0 &&
   $(metric sengine.txt vllm:num_requests_running 1) == 0.0 ]] || fail "router stall: the request reached the engine"
is_code "http://127.0.0.1:$P/health" 200 && alive "$HELD" || fail "router stall: /health $CODE, or the request was answered"
end_quietly "$HELD"
kill -TERM "$ROUTER_PID"
wait_exit "$ROUTER_PID" 2
[[ $RC -eq 0 ]] || fail "router stall: SIGTERM gave status $RC"
stop_engine "$ENGINE" 3
ok "FAKE_ROUTER_STALL_AFTER_S: requests held and counted in vllm_router_running_requests, none reaches the engine, /health answers"

# External load balancing: one process per rank, one worker URL each.
E0=$(free_port)
E1=$(free_port)
P=$(free_port)
M=$(free_port)
RPC=$(free_port)
start rank0 "$VLLM" serve /m --served-model-name m --host 127.0.0.1 --port "$E0" --data-parallel-size 2 \
  --data-parallel-rank 0 --data-parallel-address 127.0.0.1 --data-parallel-rpc-port "$RPC"
R0=$PID
start rank1 "$VLLM" serve /m --served-model-name m --host 127.0.0.1 --port "$E1" --data-parallel-size 2 \
  --data-parallel-rank 1 --data-parallel-address 127.0.0.1 --data-parallel-rpc-port "$RPC"
R1=$PID
start router2 FAKE_ROUTER_EXIT_AFTER_S=3 "$ROUTER" --worker-urls "http://127.0.0.1:$E0" "http://127.0.0.1:$E1" \
  --policy consistent_hash --host 127.0.0.1 --port "$P" --prometheus-port "$M"
ROUTER_PID=$PID
wait_for 5 is_code "http://127.0.0.1:$E0/health" 200 || fail "rank 0 never ready"
wait_for 5 is_code "http://127.0.0.1:$E1/health" 200 || fail "rank 1 never ready"
wait_for 5 is_code "http://127.0.0.1:$P/health" 200 || fail "router2 /health"
[[ $(child_comms "$R0") == EngineCore_DP0 && $(child_comms "$R1") == EngineCore_DP1 ]] ||
  fail "--data-parallel-rank: $(child_comms "$R0") / $(child_comms "$R1")"
IX_ENDPOINT="http://127.0.0.1:$P" "$CLIENT" --sessions 8 --turns 2 --out "$TMP/result4.json" >"$TMP/client4.log" 2>&1 ||
  fail "client (external LB) failed: $(cat "$TMP/client4.log")"
pyjson "$TMP/result4.json" 'd["summary"]["ranks_used"] == [0, 1] and d["summary"]["sessions_on_one_rank"]' || fail "external LB affinity"
ok "--data-parallel-rank: one EngineCore_DP<r> per process, the router spreads sessions over both"
wait_exit "$ROUTER_PID" 4
[[ $RC -eq 1 ]] || fail "FAKE_ROUTER_EXIT_AFTER_S: status $RC"
ok "FAKE_ROUTER_EXIT_AFTER_S: the router exits 1"
KIDS="$(children "$R0") $(children "$R1")"
kill -TERM "$R0" "$R1"
wait_exit "$R0" 3
wait_exit "$R1" 3
# shellcheck disable=SC2086
all_gone $KIDS

# --------------------------------------------------------------- multi-node
# Every "node" is a process on 127.0.0.1; the join goes over real TCP.

# established_to PORT PID: PID holds an established TCP connection to PORT
# (ss -tnp; without ss, any established connection to PORT in /proc/net/tcp).
established_to() {
  if command -v ss >/dev/null; then
    ss -Htnp state established "( dport = :$1 )" 2>/dev/null | grep -q "pid=$2,"
    return
  fi
  python3 - "$1" <<'EOF'
import sys
port = int(sys.argv[1])
rows = [l.split() for l in open("/proc/net/tcp").read().splitlines()[1:]]
sys.exit(0 if any(r[3] == "01" and int(r[2].split(":")[1], 16) == port for r in rows) else 1)
EOF
}
first_child() { ps -o pid= --ppid "$1" | head -1 | tr -d ' '; }

# Data parallel across nodes: a head with ranks 0-1 of 6, two headless nodes.
E=$(free_port)
RPC=$(free_port)
DP=(--data-parallel-size 6 --data-parallel-size-local 2 --data-parallel-address 127.0.0.1 --data-parallel-rpc-port "$RPC")
start dphead "$VLLM" serve /models/test --served-model-name test-model --host 127.0.0.1 --port "$E" "${DP[@]}"
HEAD=$PID
wait_for 3 log_has dphead "waiting for data-parallel ranks 2-5 to join on 127.0.0.1:$RPC" || fail "dp head: not waiting"
refused "http://127.0.0.1:$E/health" || fail "dp head: /health $CODE before any node joined"
[[ $(child_comms "$HEAD") == "EngineCore_DP0 EngineCore_DP1" ]] || fail "dp head: $(child_comms "$HEAD")"
start dpnode1 "$VLLM" serve /models/test --headless "${DP[@]}" --data-parallel-start-rank 2
NODE1=$PID
wait_for 3 log_has dphead "ranks 2-3 is ready; still waiting for data-parallel ranks 4-5" || fail "dp head: node 1 not ready"
refused "http://127.0.0.1:$E/health" || fail "dp head: /health $CODE with one of two nodes joined"
established_to "$RPC" "$NODE1" || fail "dp node 1: no established connection to the head's port $RPC"
ok "data parallel: the head refuses its API until every node joined; node 1 holds a TCP connection to :$RPC"
start dpnode2 "$VLLM" serve /models/test --headless "${DP[@]}" --data-parallel-start-rank 4
NODE2=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "dp head: /health not 200 once every node joined"
curl -s "http://127.0.0.1:$E/v1/models" >"$TMP/mmodels.json"
pyjson "$TMP/mmodels.json" 'd["data"][0]["id"] == "test-model"' || fail "dp head /v1/models: $(cat "$TMP/mmodels.json")"
established_to "$RPC" "$NODE2" || fail "dp node 2: no established connection to :$RPC"
[[ $(child_comms "$NODE1") == "EngineCore_DP2 EngineCore_DP3" && $(child_comms "$NODE2") == "EngineCore_DP4 EngineCore_DP5" ]] ||
  fail "dp nodes: $(child_comms "$NODE1") / $(child_comms "$NODE2")"
for r in 0 1 2 3 4 5; do
  curl -s -H "X-data-parallel-rank: $r" "http://127.0.0.1:$E/v1/completions" -d '{"prompt":"x","max_tokens":2}' \
    >"$TMP/mrank$r.json"
done
python3 -c 'import json, sys; sys.exit(any(json.load(open(f"{sys.argv[1]}/mrank{r}.json"))["served_by_rank"] != r for r in range(6)))' \
  "$TMP" || fail "served ranks: $(cat "$TMP"/mrank*.json)"
log_has dpnode1 "joined the head node at 127.0.0.1:$RPC" && ! log_has dpnode1 "Starting vLLM API server" ||
  fail "dp node 1: not joined, or serving an API"
ok "data parallel: ready with every node; the head answers for all 6 ranks; headless nodes serve no API"
KIDS="$(children "$HEAD") $(children "$NODE1") $(children "$NODE2")"
T0=$(now_ms)
kill -KILL "$(first_child "$NODE2")"
wait_exit "$NODE2" 2
[[ $RC -eq 1 ]] || fail "dp node 2 after its EngineCore died: status $RC"
wait_exit "$HEAD" 2
[[ $RC -eq 1 ]] || fail "dp head after losing node 2: status $RC"
MS=$(($(now_ms) - T0))
((MS <= 2000)) || fail "dp: the head took $MS ms to exit"
wait_exit "$NODE1" 2
[[ $RC -eq 1 ]] || fail "dp node 1 after the head failed: status $RC"
# shellcheck disable=SC2086
all_gone $KIDS
log_has dpnode2 "EngineCore_DP4 (pid [0-9]*) died unexpectedly: killed by signal 9" || fail "dp node 2: no death logged"
log_has dphead "ERROR: lost node with data-parallel ranks 4-5" || fail "dp head: the lost node is not named"
log_has dpnode1 "the head node at 127.0.0.1:$RPC .* failed: lost node" || fail "dp node 1: the head's failure not logged"
ok "data parallel: a killed EngineCore on node 2 ends node 2, the head and node 1 with status 1 in $MS ms"

# A node that never joins, a node on the wrong port, a global crash rank.
E=$(free_port)
RPC=$(free_port)
DP=(--data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-address 127.0.0.1 --data-parallel-rpc-port "$RPC")
start njhead "$VLLM" serve /m --host 127.0.0.1 --port "$E" "${DP[@]}"
HEAD=$PID
start njnode FAKE_VLLM_NEVER_JOIN=1 "$VLLM" serve /m --headless "${DP[@]}" --data-parallel-start-rank 2
NODE1=$PID
wait_for 3 log_has njnode "fault FAKE_VLLM_NEVER_JOIN" || fail "never join: not logged"
sleep 0.5
refused "http://127.0.0.1:$E/health" && alive "$NODE1" && ! established_to "$RPC" "$NODE1" ||
  fail "never join: /health $CODE, or the node died or connected"
ok "FAKE_VLLM_NEVER_JOIN: the node lives unconnected, the head stays refused"
BAD=$(free_port)
T0=$(now_ms)
RC=0
FAKE_VLLM_JOIN_TIMEOUT_S=0.5 "$VLLM" serve /m --headless --data-parallel-size 4 --data-parallel-size-local 2 \
  --data-parallel-start-rank 2 --data-parallel-address 127.0.0.1 --data-parallel-rpc-port "$BAD" \
  >"$TMP/wrongport.log" 2>"$TMP/wrongport.err" || RC=$?
MS=$(($(now_ms) - T0))
grep -q "cannot join the head node at 127.0.0.1:$BAD (--data-parallel-address/--data-parallel-rpc-port) within 0.5 s (FAKE_VLLM_JOIN_TIMEOUT_S): Connection refused" "$TMP/wrongport.err" &&
  [[ $RC -eq 1 ]] || fail "wrong port: status $RC, $(cat "$TMP/wrongport.err")"
((MS < 2000)) || fail "wrong port: failed after $MS ms with a 0.5 s join timeout"
ok "a node on the wrong port exits 1 in $MS ms naming the address, port and flags"
stop_engine "$NODE1" 2
stop_engine "$HEAD" 2
E=$(free_port)
RPC=$(free_port)
DP=(--data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-address 127.0.0.1 --data-parallel-rpc-port "$RPC")
CRASH=(FAKE_VLLM_CRASH_ENGINE_RANK=3 FAKE_VLLM_CRASH_ENGINE_AFTER_S=0.3)
start crhead "${CRASH[@]}" "$VLLM" serve /m --host 127.0.0.1 --port "$E" "${DP[@]}"
HEAD=$PID
start crnode "${CRASH[@]}" "$VLLM" serve /m --headless "${DP[@]}" --data-parallel-start-rank 2
NODE1=$PID
wait_exit "$NODE1" 5
[[ $RC -eq 1 ]] || fail "crash rank 3: node status $RC"
wait_exit "$HEAD" 2
# The head crashes nothing of its own and ends with the lost node (its own
# timer, "the rank to crash is not on this node", may not fire first: the
# node became ready, and so crashes, a little before the head).
[[ $RC -eq 1 ]] && log_has crnode "crashing EngineCore_DP3" && log_has crhead "lost node with data-parallel ranks 2-3" &&
  ! log_has crhead "crashing EngineCore" || fail "crash rank 3: head status $RC"
ok "FAKE_VLLM_CRASH_ENGINE_RANK=3 (a global rank) crashes node 2's EngineCore_DP3 only; both exit 1"

# Tensor x pipeline parallel across nodes: TP 8 x PP 2 over 2 nodes.
E=$(free_port)
MP=$(free_port)
TP=(--tensor-parallel-size 8 --pipeline-parallel-size 2 --nnodes 2 --master-addr 127.0.0.1 --master-port "$MP")
start tphead "$VLLM" serve /m --host 127.0.0.1 --port "$E" "${TP[@]}" --node-rank 0
HEAD=$PID
wait_for 3 log_has tphead "waiting for node rank 1 to join on 127.0.0.1:$MP" || fail "tp head: not waiting"
refused "http://127.0.0.1:$E/health" || fail "tp head: /health $CODE before node 1 joined"
start tpnode "$VLLM" serve /m "${TP[@]}" --node-rank 1 --headless
NODE1=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "tp head: never ready"
established_to "$MP" "$NODE1" || fail "tp node: no established connection to :$MP"
RC=0
"$VLLM" serve /m "${TP[@]}" --node-rank 1 --headless >/dev/null 2>"$TMP/tpdup.err" || RC=$?
grep -q "refused this node: node rank 1 has already joined" "$TMP/tpdup.err" && [[ $RC -eq 1 ]] ||
  fail "a second node rank 1: status $RC, $(cat "$TMP/tpdup.err")"
T0=$(now_ms)
kill -TERM "$HEAD"
wait_exit "$HEAD" 2
[[ $RC -eq 0 ]] || fail "tp head SIGTERM: status $RC"
wait_exit "$NODE1" 2
[[ $RC -eq 0 ]] && log_has tpnode "shut down (BYE)" || fail "tp node after the head's BYE: status $RC"
ok "tp x pp across nodes: ready once node rank 1 joined (a duplicate is refused); SIGTERM of the head ends both with 0 in $(($(now_ms) - T0)) ms"
start tphead2 "$VLLM" serve /m --host 127.0.0.1 --port "$E" "${TP[@]}" --node-rank 0
HEAD=$PID
start tpnode2 "$VLLM" serve /m "${TP[@]}" --node-rank 1 --headless
NODE1=$PID
wait_for 5 is_code "http://127.0.0.1:$E/health" 200 || fail "tp head 2: never ready"
T0=$(now_ms)
kill -USR1 "$(first_child "$NODE1")"  # the fake EngineCore's crash: exit status 1
wait_exit "$NODE1" 2
[[ $RC -eq 1 ]] || fail "tp node after its EngineCore died: status $RC"
wait_exit "$HEAD" 2
MS=$(($(now_ms) - T0))
[[ $RC -eq 1 ]] && log_has tphead2 "ERROR: lost node rank 1" || fail "tp head after losing node rank 1: status $RC"
((MS <= 2000)) || fail "tp: the head took $MS ms to exit"
ok "tp x pp: an EngineCore death on node rank 1 ends both with status 1 in $MS ms"
RC=0
FAKE_VLLM_JOIN_TIMEOUT_S=0.3 "$VLLM" serve /m "${TP[@]}" --node-rank 1 --headless >/dev/null 2>"$TMP/tpbad.err" || RC=$?
grep -q "cannot join the head node at 127.0.0.1:$MP (--master-addr/--master-port)" "$TMP/tpbad.err" && [[ $RC -eq 1 ]] ||
  fail "tp node without a head: status $RC, $(cat "$TMP/tpbad.err")"
RC=0
"$VLLM" serve /m "${TP[@]}" --node-rank 1 >/dev/null 2>"$TMP/tpargs.err" || RC=$?
grep -q "error: --node-rank 1 needs --headless" "$TMP/tpargs.err" && [[ $RC -eq 2 ]] || fail "tp node without --headless: status $RC"
ok "tp x pp: a node without its head exits 1 naming --master-addr/--master-port; --node-rank 1 without --headless exits 2"

# The Mooncake master: listens (and keeps what connects) on --port until
# SIGTERM, exits 0; drift in its command line is exit 2; it can die on cue.
MC=$(free_port)
start mooncake "$BIN/mooncake_master" --port "$MC" --eviction_high_watermark_ratio=0.80 --eviction_ratio=0.10
MCPID=$PID
wait_for 5 log_has mooncake "listening on port $MC" || fail "mooncake_master did not listen"
exec 7<>"/dev/tcp/127.0.0.1/$MC" || fail "mooncake_master refused a connection"
wait_for 5 log_has mooncake "accepted a connection" || fail "mooncake_master did not accept"
exec 7>&-
kill -TERM "$MCPID"
wait_exit "$MCPID" 5
[[ $RC -eq 0 ]] || fail "mooncake_master: status $RC after SIGTERM"
RC=0
"$BIN/mooncake_master" --port "$MC" --eviction-ratio=0.1 >/dev/null 2>"$TMP/mcbad.err" || RC=$?
[[ $RC -eq 2 ]] && grep -q "unknown argument '--eviction-ratio=0.1'" "$TMP/mcbad.err" || fail "mooncake_master bad flag: status $RC"
RC=0
FAKE_MOONCAKE_EXIT_AFTER_S=0.2 "$BIN/mooncake_master" --port "$MC" >"$TMP/mcdie.log" 2>&1 || RC=$?
[[ $RC -eq 1 ]] || fail "mooncake_master FAKE_MOONCAKE_EXIT_AFTER_S: status $RC"
ok "mooncake_master: listens, accepts, stops on SIGTERM; unknown flags exit 2; dies on cue"

for p in "${PIDS[@]}"; do
  alive "$p" && fail "process $p is left over"
done
ok "no process left"
echo "fakes_test.sh: all passed"
