#!/usr/bin/env bash
# The node agent and the collector end to end, both started here by hand:
# 200 events sent through the agent's socket while the collector is
# SIGKILLed and restarted mid-stream, then the agent SIGKILLed and restarted
# mid-stream (it replays its spool), ten events sent twice: `ixsubmit
# events --json` lists each of the 200 exactly once. Also: a result file
# handed over as a descriptor arrives with its sha256, a step's
# gpu_metrics.csv is written in nvidia-smi's format from the fake NVML, and
# `promtool check metrics` accepts the agent's /metrics.
# Usage: agent_stream_test.sh IX_NODE_AGENT IXSUBMIT FAKE_NVML_DIR
set -uo pipefail
agent_bin=$1 ixsubmit=$2 nvml_dir=$3
dir=$(mktemp -d /tmp/ix-agent-stream.XXXXXX)
collector= agent=
trap '{ kill -9 $collector $agent; wait; } 2>/dev/null; rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
sock=$dir/agent.sock db=$dir/ix.db
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token"; chmod 600 "$dir/token"
printf 'gpus 2\nidle_watts 80\nbusy_watts 680\nload_file %s\n' "$dir/load" >"$dir/nvml.script"
export IX_NVML_LIBRARY=$nvml_dir/libnvidia-ml.so.1 IX_FAKE_NVML_SCRIPT=$dir/nvml.script

start_collector() {
  "$ixsubmit" serve --listen "127.0.0.1:${port:-0}" --db "$db" --token-file "$dir/token" >"$dir/serve.out" 2>&1 &
  collector=$!
  for _ in $(seq 100); do grep -q "listening on" "$dir/serve.out" && break; sleep 0.1; done
  port=$(sed -n 's/^ixsubmit serve: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/serve.out")
  [[ -n $port ]] || { fail "collector did not start: $(cat "$dir/serve.out")"; exit 1; }
}
start_agent() {
  "$agent_bin" --config /dev/null --socket "$sock" --spool "$dir/spool" --collector "http://127.0.0.1:$port" \
    --token-file "$dir/token" --metrics-listen "127.0.0.1:${metrics_port:-0}" --interval 1 >>"$dir/agent.log" 2>&1 &
  agent=$!
  for _ in $(seq 100); do [[ -S $sock ]] && grep -q "listening on" "$dir/agent.log" && break; sleep 0.1; done
  [[ -S $sock ]] || { fail "agent did not start: $(cat "$dir/agent.log")"; exit 1; }
}
# send FROM TO: events FROM..TO-1, each as one datagram; a send that finds
# no agent (it is being restarted) is retried for up to 10 s.
send() {
  python3 - "$sock" "$1" "$2" <<'PY'
import json, socket, sys, time
path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for i in range(lo, hi):
    e = {"id": "500.0:%d" % i, "event": "started", "step": "500.0", "time": time.time(),
         "sweep": "sw-stream", "entry": i % 5, "process": "engine"}
    deadline = time.time() + 10
    while True:
        try:
            s.sendto(json.dumps(e).encode(), path)
            break
        except OSError:
            if time.time() > deadline: sys.exit("cannot send event %d" % i)
            time.sleep(0.05)
PY
}
stored() { "$ixsubmit" events sw-stream --db "$db" --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# taken_in N: waits until the running agent has spooled N events. Its
# /metrics counts an event once the loop has appended it to the fsync'd
# spool; a datagram still queued on the socket dies with a SIGKILLed agent,
# so the test kills it only after this.
taken_in() {
  local mport n=0
  mport=$(sed -n 's/.*metrics on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/agent.log" | tail -1)
  for _ in $(seq 100); do
    n=$(curl -s "http://127.0.0.1:$mport/metrics" | sed -n 's/^ix_agent_events_received_total \([0-9]*\)$/\1/p')
    (( ${n:-0} >= $1 )) && return 0
    sleep 0.1
  done
  fail "the agent took in ${n:-0} events, not $1"
}

start_collector
start_agent
send 0 60
{ kill -9 "$collector"; wait "$collector"; } 2>/dev/null
send 60 100                  # spooled while the collector is down
start_collector              # the same port: the agent retries it
send 100 140
taken_in 140
{ kill -9 "$agent"; wait "$agent"; } 2>/dev/null
start_agent                  # replays what it had not delivered
send 140 200
send 0 10                    # ten events again
for _ in $(seq 300); do [[ $(stored) == 200 ]] && break; sleep 0.1; done
"$ixsubmit" events sw-stream --db "$db" --json >"$dir/events.json"
python3 - "$dir/events.json" <<'PY' || fail "events: $(head -c 300 "$dir/events.json")"
import collections, json, sys
ids = collections.Counter(e["id"] for e in json.load(open(sys.argv[1])))
want = {"500.0:%d" % i for i in range(200)}
assert set(ids) == want, "missing %s, extra %s" % (sorted(want - set(ids))[:5], sorted(set(ids) - want)[:5])
assert max(ids.values()) == 1, "listed twice: %s" % [i for i, n in ids.items() if n > 1][:5]
PY

# A step's telemetry: gpu_metrics.csv through a descriptor, GPU 1 only.
echo 0.5 >"$dir/load"
python3 - "$sock" "$dir/gpu_metrics.csv" "$dir/result.json" <<'PY'
import array, json, os, socket, sys, time
path, csv, result = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
def send(event, fd=None, **fields):
    e = {"id": "501.0:%d" % send.seq, "event": event, "step": "501.0", "time": time.time(), "sweep": "sw-stream", "entry": 7}
    e.update(fields); send.seq += 1
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))] if fd is not None else []
    s.sendmsg([json.dumps(e).encode()], anc, 0, path)
send.seq = 1
fd = os.open(csv, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
send("telemetry", fd, gpus=[1], metrics_urls=[])
os.close(fd)
time.sleep(3.2)
send("finished")
open(result, "w").write('{"completed": 3}\n')
fd = os.open(result, os.O_RDONLY)
send("result", fd, name="result.json")
os.close(fd)
PY
sleep 0.5
header='timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%]'
[[ $(head -1 "$dir/gpu_metrics.csv") == "$header" ]] || fail "csv header: $(head -1 "$dir/gpu_metrics.csv")"
rows=$(tail -n +2 "$dir/gpu_metrics.csv" | wc -l)
(( rows >= 3 )) || fail "csv rows: $rows"
tail -n +2 "$dir/gpu_metrics.csv" | awk -F', ' '$2 != 1 { bad = 1 } END { exit bad }' || fail "csv has GPUs other than 1"
want=$(sha256sum "$dir/result.json" | cut -d' ' -f1)
for _ in $(seq 100); do
  got=$("$ixsubmit" events sw-stream --db "$db" --results --json 2>/dev/null | python3 -c '
import json, sys
print(" ".join(r["sha256"] for r in json.load(sys.stdin) if r["name"] == "result.json"))' 2>/dev/null)
  [[ $got == "$want" ]] && break; sleep 0.1
done
[[ $got == "$want" ]] || fail "result.json: sha256 '$got', want $want"

# /metrics through promtool.
mport=$(sed -n 's/.*metrics on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/agent.log" | tail -1)
curl -sS "http://127.0.0.1:$mport/metrics" >"$dir/metrics.txt" || fail "no /metrics on port '$mport'"
grep -q '^ix_gpu_power_watts{gpu="1"' "$dir/metrics.txt" || fail "no GPU power in /metrics"
promtool check metrics <"$dir/metrics.txt" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
[[ ! -s $dir/promtool.out ]] || fail "promtool lint: $(cat "$dir/promtool.out")"

if (( failures )); then
  echo "--- agent log"; tail -30 "$dir/agent.log"
  echo "$failures failure(s)"; exit 1
fi
echo "agent stream: ok"
