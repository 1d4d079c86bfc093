#!/usr/bin/env bash
# Multi-node arms end to end on a cluster of two nodes of the script's own
# (one network, UTS and mount namespace per node; scripts/local-cluster.sh
# start --nodes 2) with the fake engine, router and client:
# srun -N2 --ntasks-per-node=1 --gres=gpu:8 --inferencex-arm=dep16|tp8pp2.
# Checks, per arm: the client in task 0 on the head is served; every task
# gets IX_ENDPOINT at the head's address (the second node reaches it),
# IX_NODE_RANK and IX_NODES; during the step the second node's engine holds
# an established TCP connection to the head's address on the step port;
# each node ran the plan of its rank (the head's engine and router; the
# other's engine --headless). Failures: an EngineCore killed on the second
# node, and on the head, ends srun non-zero within 2 s with failure.json
# naming the node and process; a node that never joins ends the step at the
# ready timeout; scancel ends everything; a sweep of aggregated multinode
# rows runs each as `sbatch --nodes=2` with InferenceX's agg result; a
# single-node arm on two nodes and a multi-node arm on one are refused. After each: no process of the
# step on any node, nothing listening in any node, no lease in any node;
# at the end, no step daemon crashed (the nodes' slurmd logs, the kernel's log).
# Skips (77) when not root.
# Task scripts are single-quoted on purpose (they expand in the task).
# shellcheck disable=SC2016,SC2015,SC2013
set -uo pipefail
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (namespaces, veths, a Slurm cluster)"; exit 77; }
ix_require_env IX_FAKES_BIN_DIR IXCTL IXSUBMIT IX_SPANK_PLUGIN IX_SOURCE_DIR
RECIPE=dsv41flash-fp4-b300-vllm
tmp=$(mktemp -d /tmp/ix-mn-step.XXXXXX)
ix_nodes_start 2
trap 'ix_nodes_stop; rm -rf "$tmp"' EXIT
# The kernel's count of step daemons that crashed (e.g. "slurmstepd[PID]:
# segfault at 12 ... in libslurmfull.so", 26.05 with 22.05's
# slurm_kill_job_step arguments): compared at the end. Empty where the
# kernel log cannot be read.
stepd_segfaults() {
  local k
  k=$(dmesg 2>/dev/null) || return 0
  grep -c 'slurmstepd.*segfault' <<<"$k"
}
segv0=$(stepd_segfaults)
head=$(scontrol show node ixn1 | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)
netns2=$(lc exec ixn2 readlink /proc/self/ns/net)

# What every task does: writes its environment and plan; the others check
# the head's front door by IX_ENDPOINT and list their node's established
# connections to the head, then exit (the plugin keeps their node's part up
# until the head ends it); the head's runs the client once they have (the
# result directory is shared: /tmp on this machine).
TASK='
d=$IX_RESULT_DIR
env | grep -E "^(IX_|SLURM_NODEID=)" | sort >"$d/env.txt"
cp "$IX_RUN_DIR/plan.json" "$d/plan.json"
if [ "$IX_NODE_RANK" = 0 ]; then
  for i in $(seq 200); do [ -e "$d/node1/checked" ] && break; sleep 0.05; done
  exec ix-fake-client --sessions ${SESSIONS:-8} --turns ${TURNS:-2} --out "$d/result.json"
fi
python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + \"/health\", timeout=5)" "$IX_ENDPOINT" &&
  echo reached >"$d/endpoint.txt"
ss -Htnp state established dst "$IX_HEAD_ADDR" >"$d/conns.txt"
touch "$d/checked"
'

# run_mn NAME ARM [ENV...] [-- SRUN_OPTS...]: a two-node step; its output in
# $tmp/NAME/srun.{out,err}, its status in rc.
run_mn() {
  local name=$1 arm=$2; shift 2
  local envs=() opts=()
  while (($#)) && [[ $1 != -- ]]; do envs+=("$1"); shift; done
  [[ ${1:-} == -- ]] && { shift; opts=("$@"); }
  mkdir -p "$tmp/$name"
  env "${envs[@]}" IX_RESULT_DIR="$tmp/$name" FAKE_VLLM_RECORD_DIR="$tmp/$name" \
    timeout 120 srun -N2 --ntasks-per-node=1 --gres=gpu:8 --inferencex-recipe=$RECIPE \
    --inferencex-arm="$arm" --inferencex-conc=64 "${opts[@]}" bash -c "$TASK" \
    >"$tmp/$name/srun.out" 2>"$tmp/$name/srun.err"
  rc=$?
  return $rc
}

# mn_check_clean NAME: nothing of the steps is left on any node: no tagged
# process (the host sees every node's processes), no listener in any
# node's network, no lease in any node's lease directory (its own tmpfs).
mn_check_clean() {
  local name=$1 k i left listen leases
  for ((i = 0; i < 50; i++)); do
    left=$(ix_servers) listen='' leases=''
    for k in 1 2; do
      listen+=$(lc exec "ixn$k" ss -Hltnp | grep -E 'vllm|ix-|python' || true)
      leases+=$(lc exec "ixn$k" "$IXCTL" ports list --json --lease-dir "$LEASE_DIR" | grep -v '^{"leases":\[\]}$' || true)
    done
    [[ -z $left && -z $listen && -z $leases ]] && return 0
    sleep 0.1
  done
  [[ -z $left ]] || fail "$name: processes left: $(tr '\n' ' ' <<<"$left")"
  [[ -z $listen ]] || fail "$name: still listening in a node: $listen"
  [[ -z $leases ]] || fail "$name: leases left in a node: $leases"
  for i in $left; do kill -KILL "${i%%(*}" 2>/dev/null; done
}

# port_of DIR NAME: IX_PORT_NAME as the task in DIR saw it.
port_of() { sed -n "s/^IX_PORT_$2=//p" "$1/env.txt"; }

# 1. Each arm served across two nodes.
for arm in dep16 tp8pp2; do
  d=$tmp/$arm
  run_mn "$arm" "$arm"
  if [[ $rc -ne 0 ]]; then fail "$arm: srun exited $rc: $(cat "$d/srun.err")"; mn_check_clean "$arm"; continue; fi
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); s=r["summary"]; assert s["failed"]==0 and r["completed"]>0, s' \
    "$d/result.json" && ok "$arm: the client on the head was served" || fail "$arm: client result"
  port=$(port_of "$d" PORT)
  join=$(port_of "$d" DP_RPC_PORT)$(port_of "$d" MASTER_PORT)
  for k in "" /node1; do
    grep -qx "IX_ENDPOINT=http://$head:$port" "$d$k/env.txt" || fail "$arm: IX_ENDPOINT in ${k:-head}: $(grep IX_ENDPOINT "$d$k/env.txt")"
    grep -qx "IX_NODES=2" "$d$k/env.txt" || fail "$arm: IX_NODES in ${k:-head}"
  done
  grep -qx "IX_NODE_RANK=0" "$d/env.txt" && grep -qx "IX_NODE_RANK=1" "$d/node1/env.txt" || fail "$arm: IX_NODE_RANK"
  [[ $(port_of "$d/node1" PORT) == "$port" ]] || fail "$arm: the nodes disagree on PORT"
  [[ -s $d/node1/endpoint.txt ]] && ok "$arm: node 2 reached the head's front door at http://$head:$port" \
    || fail "$arm: node 2 could not reach $head:$port"
  grep -q "$head:$join .*vllm" "$d/node1/conns.txt" && ok "$arm: node 2's engine held a connection to $head:$join" \
    || fail "$arm: no established connection from node 2's engine to $head:$join: $(cat "$d/node1/conns.txt")"
  python3 - "$d" "$arm" "$head" <<'PY' || fail "$arm: the plans of the two nodes"
import json, sys
d, arm, head = sys.argv[1:]
h, o = json.load(open(d + "/plan.json")), json.load(open(d + "/node1/plan.json"))
names = lambda p: [x["name"] for x in p["processes"]]
assert (h["node_rank"], o["node_rank"], h["nodes"]) == (0, 1, 2), (h.get("node_rank"), o.get("node_rank"))
assert names(o) == ["engine"], names(o)
assert names(h) == (["engine", "router"] if arm == "dep16" else ["engine"]), names(h)
he, oe = h["processes"][0]["argv"], o["processes"][-1]["argv"]
assert "--headless" in oe and "--headless" not in he, (he, oe)
assert head in he and head in oe, (he, oe)
if arm == "dep16":
    assert oe[oe.index("--data-parallel-start-rank") + 1] == "8", oe
PY
  mn_check_clean "$arm"
done

# failed_as NAME [NODE]: srun ended non-zero, and a failure.json somewhere
# in the step's result directory names a node and a process; with NODE, the
# head's (the step's own) names NODE, where the failure began.
failed_as() {
  local name=$1 first=${2:-}
  [[ $rc -ne 0 ]] || fail "$name: srun exited 0"
  python3 - "$tmp/$name" "$first" <<'PY' || fail "$name: failure.json: $(cat "$tmp/$name"/failure.json "$tmp/$name"/node1/failure.json 2>&1)"
import json, os, sys
found = [json.load(open(p)) for p in (sys.argv[1] + "/failure.json", sys.argv[1] + "/node1/failure.json") if os.path.exists(p)]
assert found and all(f.get("node") in ("ixn1", "ixn2") and f.get("process") for f in found), found
if sys.argv[2]:
    step = json.load(open(sys.argv[1] + "/failure.json"))
    assert step["node"] == sys.argv[2] and "EngineCore" in step["process"], step
print("  failure.json:", "; ".join(f'{f["node"]}: {f["process"]}: {f["reason"][:100]}' for f in found))
PY
}

# kill_core_on NODE_NETNS: SIGKILL to one EngineCore of this script's steps
# in that node's network namespace; prints the time.
kill_core_on() {
  local f pid
  for f in $(grep -lzx "IX_TEST_TAG=$IX_TEST_TAG" /proc/[0-9]*/environ 2>/dev/null); do
    pid=${f#/proc/}; pid=${pid%/environ}
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == EngineCore_DP* ]] || continue
    [[ $(readlink "/proc/$pid/ns/net") == "$1" ]] || continue
    kill -KILL "$pid" && now_ms && return 0
  done
  return 1
}

# 2. An EngineCore killed on each node while the client runs.
netns1=$(lc exec ixn1 readlink /proc/self/ns/net)
for point in "dep16 $netns2 node2" "dep16 $netns1 head" "tp8pp2 $netns2 node2"; do
  read -r arm ns where <<<"$point"
  name=crash-$arm-$where
  run_mn "$name" "$arm" SESSIONS=64 TURNS=1000 FAKE_VLLM_TOKEN_DELAY_MS=20 &
  pid=$!
  t0=
  for ((i = 0; i < 200; i++)); do
    [[ -s $tmp/$name/result.json || ! -d /proc/$pid ]] && break
    if [[ -s $tmp/$name/node1/conns.txt ]] && t0=$(kill_core_on "$ns"); then break; fi
    sleep 0.1
  done
  wait "$pid"; rc=$?
  t1=$(now_ms)
  if [[ -z $t0 ]]; then
    fail "$name: no EngineCore found to kill (srun exited $rc): $(tail -3 "$tmp/$name/srun.err")"
    mn_check_clean "$name"; continue
  fi
  ((t1 - t0 <= 2000)) && ok "$name: srun ended $((t1 - t0)) ms after the kill" || fail "$name: srun took $((t1 - t0)) ms"
  failed_as "$name" "$([[ $where == head ]] && echo ixn1 || echo ixn2)"
  mn_check_clean "$name"
done

# 3. A node that never joins: the step ends at the ready timeout.
t0=$(now_ms)
run_mn never-join dep16 FAKE_VLLM_NEVER_JOIN=1 -- --inferencex-ready-timeout=4
t1=$(now_ms)
((t1 - t0 <= 4000 + 2000 + 3000)) && ok "never-join: srun ended after $((t1 - t0)) ms (ready timeout 4 s)" \
  || fail "never-join: srun took $((t1 - t0)) ms"
failed_as never-join
mn_check_clean never-join

# 4. scancel while the client runs.
mkdir -p "$tmp/scancel"
job=$(sbatch --parsable -N2 --ntasks-per-node=1 --gres=gpu:8 -o "$tmp/scancel/job.out" \
  --export=ALL,IX_RESULT_DIR="$tmp/scancel",SESSIONS=64,TURNS=500,FAKE_VLLM_TOKEN_DELAY_MS=5 \
  --wrap "srun -N2 --ntasks-per-node=1 --gres=gpu:8 --inferencex-recipe=$RECIPE --inferencex-arm=dep16 --inferencex-conc=64 bash -c '$TASK'")
for ((i = 0; i < 200; i++)); do [[ -s $tmp/scancel/node1/conns.txt ]] && break; sleep 0.1; done
[[ -s $tmp/scancel/node1/conns.txt ]] || fail "scancel: the step did not get ready: $(cat "$tmp/scancel/job.out")"
scancel "$job"
for ((i = 0; i < 100; i++)); do [[ -z $(squeue -h -j "$job" 2>/dev/null) ]] && break; sleep 0.1; done
[[ -z $(squeue -h -j "$job" 2>/dev/null) ]] && ok "scancel: job $job ended" || fail "scancel: job $job still queued"
mn_check_clean scancel

# 5. A sweep of aggregated multinode rows (recipes/examples): each
#    concurrency one array task of `sbatch --nodes=2`, one step across both
#    nodes, the client on the head, InferenceX's agg result with the
#    multinode fields. Skipped by a build without ixsubmit
#    (scripts/release-test.sh --quick).
if [[ ! -x $IXSUBMIT ]]; then
  echo "skipped: sweep: no $IXSUBMIT in this build"
else
  "$IXSUBMIT" sweep full-sweep-fail-fast --no-container --throttle 2 --db "$tmp/ix.db" --sweep-dir "$tmp/sweep" \
    --config-files "$IX_SOURCE_DIR/recipes/examples/dsv41flash-b300-multinode.yaml" \
    --config-keys dsv41flash-fp4-b300-vllm-multinode -- ix-fake-client --sessions 4 --turns 2 >"$tmp/sweep.out" 2>&1 &&
    grep -q "succeeded.*done 3, failed 0" "$tmp/sweep.out" && ok "sweep: 3 multinode entries done" ||
    fail "sweep: $(tail -5 "$tmp/sweep.out")"
  python3 - "$tmp/sweep" <<'PY' || fail "sweep: the entries' results"
import glob, json, os, sys
plan = json.load(open(sys.argv[1] + "/sweep.json"))
entries = plan["entries"]
assert sorted((e["arm"], e["conc"], e["nodes"]) for e in entries) == [("dep16", 32, 2), ("dep16", 64, 2), ("tp8pp2", 16, 2)], entries
for e in entries:
    d = f'{sys.argv[1]}/results/{e["index"]}'
    assert os.path.exists(d + "/node1/server.log"), os.listdir(d)  # the second node's engine logged there
    aggs = glob.glob(d + "/agg_*.json")
    assert len(aggs) == 1, os.listdir(d)
    agg = json.load(open(aggs[0]))
    assert agg["is_multinode"] is True and agg["num_prefill_gpu"] == 16 and agg["conc"] == e["conc"], agg
print("  entries:", ", ".join(f'{e["arm"]}@{e["conc"]}' for e in entries))
PY
  mn_check_clean sweep
fi

# 6. The node count must fit the arm.
out=$(timeout 30 srun -N1 --gres=gpu:8 --inferencex-recipe=$RECIPE --inferencex-arm=dep16 --inferencex-conc=64 true 2>&1) \
  && fail "dep16 on one node ran" || true
grep -q "runs on 2 nodes.*srun -N2" <<<"$out" && ok "dep16 on one node refused: $(grep -o 'arm dep16 runs.*' <<<"$out" | head -1)" \
  || fail "dep16 on one node: $out"
out=$(timeout 30 srun -N2 --ntasks-per-node=1 --gres=gpu:4 --inferencex-recipe=$RECIPE --inferencex-arm=tp4 --inferencex-conc=8 true 2>&1) \
  && fail "tp4 on two nodes ran" || true
grep -q "runs on one node.*srun -N1" <<<"$out" && ok "tp4 on two nodes refused" || fail "tp4 on two nodes: $out"
mn_check_clean refusals

# 7. No step daemon crashed on the way (the failures above end steps through
#    the plugin's slurm_kill_job_step): nothing in the nodes' slurmd logs,
#    no new slurmstepd segfault in the kernel's log.
crash=$(grep -hiE 'segfault|segmentation fault|SIGSEGV|signal 11' "$dir"/log/slurmd-ixn*.log 2>/dev/null | head -3)
[[ -z $crash ]] && ok "no step daemon crash in the nodes' slurmd logs" || fail "slurmd logs: $crash"
if [[ -n $segv0 ]]; then
  segv1=$(stepd_segfaults)
  [[ $segv1 == "$segv0" ]] && ok "no slurmstepd segfault in the kernel's log" ||
    fail "the kernel's log has $((segv1 - segv0)) new slurmstepd segfault(s): $(dmesg | grep 'slurmstepd.*segfault' | tail -2)"
fi

ix_finish "${0##*/}"
