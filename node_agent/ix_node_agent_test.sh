#!/usr/bin/env bash
# ix-node-agent end to end on this machine: --once --json matches
# /sys/devices/system/node/*/meminfo (totals equal, free within a
# tolerance, since memory moves between the two reads) and statvfs of
# /dev/shm; --check says 'configuration ok' for a good file and lists every
# problem of a bad one; misuse exits 2; the daemon starts, says where it
# listens, stops on SIGTERM (exit 0) and refuses a socket path taken by
# another live agent (exit 1). With
# IX_NVML_LIBRARY pointing at tests/fakes' libnvidia-ml.so.1, --once --json
# lists the fake's GPUs with their readings.
# Usage: ix_node_agent_test.sh IX_NODE_AGENT FAKE_LIBNVIDIA_ML
set -uo pipefail
agent=$1
fake_nvml=$2
dir=$(mktemp -d /tmp/ix-node-agent-test.XXXXXX); trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# One sample against sysfs, read right after it. An empty config file, so
# the machine's /etc/inferencex/agent.conf plays no part.
"$agent" --once --json --config "$dir/absent.conf" >"$dir/sample.json" 2>"$dir/err" \
  && fail "a missing --config file was accepted"
: >"$dir/empty.conf"
# No NVML here: IX_NVML_LIBRARY names one that is not there.
IX_NVML_LIBRARY=$dir/absent/libnvidia-ml.so.1 "$agent" --once --json --config "$dir/empty.conf" \
  >"$dir/sample.json" 2>"$dir/err" || fail "--once --json failed: $(cat "$dir/err")"
python3 - "$dir/sample.json" <<'PY' || fail "--once --json does not match sysfs"
import glob, json, os, re, sys
sample = json.load(open(sys.argv[1]))
def kb(text, field):
    return int(re.search(r"\b" + re.escape(field) + r":\s+(\d+) kB", text).group(1)) * 1024
nodes = {}
for path in glob.glob("/sys/devices/system/node/node[0-9]*/meminfo"):
    n = int(re.search(r"node(\d+)/meminfo$", path).group(1))
    nodes[n] = open(path).read()
bad = []
got = {e["node"]: e for e in sample["numa"]}
if sorted(got) != sorted(nodes):
    bad.append(f"nodes {sorted(got)} != sysfs {sorted(nodes)}")
for n, text in nodes.items():
    e = got.get(n)
    if e is None:
        continue
    total = kb(text, "MemTotal")
    if e["mem_total_bytes"] != total:
        bad.append(f"node {n}: mem_total_bytes {e['mem_total_bytes']} != MemTotal {total}")
    # Free memory moves while the two reads happen (other builds, page
    # cache): within 5% of the node's memory.
    tolerance = total // 20
    for key, want in (("mem_free_bytes", kb(text, "MemFree")),
                      ("mem_available_bytes", kb(text, "MemFree") + kb(text, "Inactive(file)"))):
        if abs(e[key] - want) > tolerance:
            bad.append(f"node {n}: {key} {e[key]} vs sysfs {want}, more than {tolerance} apart")
shm = sample["shm"]
st = os.statvfs("/dev/shm")
if shm is None or shm["path"] != "/dev/shm" or shm["size_bytes"] != st.f_blocks * st.f_frsize:
    bad.append(f"shm {shm} vs statvfs size {st.f_blocks * st.f_frsize}")
if sample["gpus"] != [] or not sample["nvml"].startswith("NVML not present: cannot load "):
    bad.append(f"gpus {sample['gpus']}, nvml {sample['nvml']!r}")
if sample["notes"]:
    bad.append(f"notes {sample['notes']}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

# The fake NVML with 4 GPUs, two of them busy by its load file: every
# GPU with its readings, and NVML's version and count in "nvml".
printf '0.5\n' >"$dir/load"
printf 'gpus 4\nidle_watts 90\nbusy_watts 690\nload_file %s\n' "$dir/load" >"$dir/nvml.script"
IX_NVML_LIBRARY=$fake_nvml IX_FAKE_NVML_SCRIPT=$dir/nvml.script \
  "$agent" --once --json --config "$dir/empty.conf" >"$dir/gpus.json" 2>"$dir/err" \
  || fail "--once --json with the fake NVML failed: $(cat "$dir/err")"
python3 - "$dir/gpus.json" <<'PY' || fail "--once --json with the fake NVML: wrong GPUs"
import json, sys
sample = json.load(open(sys.argv[1]))
gpus = sample["gpus"]
bad = []
if [g["index"] for g in gpus] != [0, 1, 2, 3]:
    bad.append(f"indices {[g['index'] for g in gpus]}")
for g in gpus:
    if g["power_watts"] != 390.0 or g["gpu_utilization_percent"] != 50 or g["name"] != "NVIDIA H200":
        bad.append(f"gpu {g}")
    if not g["uuid"].startswith("GPU-") or g["energy_joules"] is None or g["xid_events"] != 0:
        bad.append(f"gpu {g}")
if not sample["nvml"].startswith("NVML 12.") or not sample["nvml"].endswith(": 4 GPUs"):
    bad.append(f"nvml {sample['nvml']!r}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

# --check: a good file, then a bad one with every kind of problem.
(umask 077; echo secret-token >"$dir/token")
cat >"$dir/good.conf" <<CONF
# a node of the test
socket = /run/inferencex/agent.sock
interval = 2
collector = https://collector.example:8443/
token-file = $dir/token
metrics-listen = [::1]:9477
CONF
out=$("$agent" --config "$dir/good.conf" --check 2>&1) || fail "good config refused: $out"
[[ $out == "configuration ok" ]] || fail "good config: $out"
# --check reads the files the configuration names, as the daemon would.
chmod 0640 "$dir/token"
out=$("$agent" --config "$dir/good.conf" --check 2>&1) && fail "a group-readable token file passed --check"
[[ $out == *"$dir/token"* ]] || fail "token file check: $out"
out=$("$agent" --config "$dir/good.conf" --token-file "$dir/none" --ca-file "$dir/none.pem" --check 2>&1) &&
  fail "a missing token file passed --check"
[[ $out == *"$dir/none"*"ca-file $dir/none.pem: cannot be read"* ]] || fail "missing files: $out"
chmod 0600 "$dir/token"

cat >"$dir/bad.conf" <<'CONF'
interval = 0
colector = http://x/
interval = 3
metrics-listen = localhost:9477
CONF
out=$("$agent" --config "$dir/bad.conf" --check 2>&1); rc=$?
[[ $rc -eq 1 ]] || fail "bad config: exit $rc, not 1"
for want in "$dir/bad.conf:1: key 'interval': expected a whole number of seconds from 1 to 3600, got '0'" \
            "$dir/bad.conf:2: key 'colector': unknown; the keys are socket, interval" \
            "$dir/bad.conf:3: key 'interval': given twice (first on line 1)" \
            "$dir/bad.conf:4: key 'metrics-listen': expected ADDR:PORT"; do
  [[ $out == *"$want"* ]] || fail "bad config: no '$want' in: $out"
done
out=$("$agent" --config "$dir/good.conf" --interval 0 --check 2>&1) && fail "--interval 0 accepted"
[[ $out == *"--interval: expected a whole number of seconds from 1 to 3600, got '0'"* ]] || fail "flag: $out"
"$agent" --config "$dir/bad.conf" --once --json >/dev/null 2>&1 && fail "--once ran with a bad config"

# --help lists every flag; misuse exits 2.
help=$("$agent" --help) || fail "--help failed"
for flag in --config --check --once --json --socket --interval --spool --collector --token-file \
            --ca-file --metrics-listen --hang-after; do
  [[ $help == *"$flag"* ]] || fail "--help lacks $flag"
done
"$agent" --bogus >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "--bogus: not exit 2"
"$agent" --once >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "--once without --json: not exit 2"

# The daemon: up, a second one on the same socket refused, SIGTERM ends it.
daemon=(--config /dev/null --socket "$dir/agent.sock" --spool "$dir/spool" --metrics-listen 127.0.0.1:0)
"$agent" "${daemon[@]}" 2>"$dir/daemon.log" &
pid=$!
for _ in $(seq 50); do grep -q "listening on $dir/agent.sock" "$dir/daemon.log" && break; sleep 0.1; done
grep -q "listening on $dir/agent.sock" "$dir/daemon.log" || fail "daemon did not start: $(cat "$dir/daemon.log")"
out=$("$agent" "${daemon[@]}" 2>&1); rc=$?
[[ $rc -eq 1 && $out == *"$dir/agent.sock"* ]] || fail "second daemon on the same socket: exit $rc: $out"
kill -TERM "$pid"; wait "$pid"; rc=$?
[[ $rc -eq 0 ]] || fail "SIGTERM: exit $rc: $(cat "$dir/daemon.log")"
[[ $(stat -c %a "$dir/spool" 2>/dev/null) == 700 ]] || fail "spool mode: $(stat -c %a "$dir/spool" 2>&1)"

[[ $failures -eq 0 ]] || exit 1
echo "ix-node-agent: all checks passed"
