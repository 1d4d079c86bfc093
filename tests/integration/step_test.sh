#!/usr/bin/env bash
# Job steps end to end on the local cluster with the fake engine, router and
# client: srun --inferencex-arm=... plans, leases, launches, waits for
# readiness, runs the client, fails fast, and leaves nothing behind.
# Needs: the cluster started by the CTest fixture (plugstack with
# topology=<HGX B300 fixture>), SLURM_CONF, IX_FAKES_BIN_DIR, IXCTL.
set -uo pipefail
RECIPE=dsv41flash-fp4-b300-vllm
export PATH=$IX_FAKES_BIN_DIR:$PATH
tmp=$(mktemp -d /tmp/ix-step-test.XXXXXX); trap 'rm -rf "$tmp"' EXIT
# The fake engine records its argv where this says, not in the working directory.
export FAKE_VLLM_RECORD_DIR=$tmp
step_opts() { echo "--inferencex-recipe=$RECIPE --inferencex-arm=$1 --inferencex-conc=$2"; }
# fail, check_clean (nothing of the steps outlives them: no process, no
# listening port, no lease in the plugin's lease directory), ix_finish.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ix_require_env SLURM_CONF IX_FAKES_BIN_DIR IXCTL

# run_step NAME ARM CONC [ENV...]: a step whose client is the fake client.
run_step() {
  local name=$1 arm=$2 conc=$3; shift 3
  mkdir -p "$tmp/$name"
  # shellcheck disable=SC2046
  env "$@" IX_RESULT_DIR="$tmp/$name" FAKE_VLLM_RECORD_DIR="$tmp/$name" \
    srun --gres=gpu:4 $(step_opts "$arm" "$conc") \
    bash -c 'ix-fake-client --sessions 6 --turns 3 --out "$IX_RESULT_DIR/result.json" && cp "$IX_RUN_DIR/plan.json" "$IX_RUN_DIR/placement.json" "$IX_RUN_DIR/placement-obtained.json" "$IX_RUN_DIR/stepd.log" "$IX_RESULT_DIR/"' \
    >"$tmp/$name/srun.out" 2>"$tmp/$name/srun.err"
}

# 1. Each arm at two concurrencies: success, the engine got the plan's argv,
#    and under dep4 sessions stick to one rank and use several.
for point in "tp4 8" "tp4 64" "tep4 32" "tep4 128" "dep4 32" "dep4 64" "dep4-rankproc 32" "dep4-rankproc 64"; do
  read -r arm conc <<<"$point"
  name=$arm-$conc
  if ! run_step "$name" "$arm" "$conc"; then fail "$name: srun failed: $(cat "$tmp/$name/srun.err")"; continue; fi
  python3 - "$tmp/$name" "$arm" <<'PY' || fail "$name: plan/record/result check"
import glob, json, sys
d, arm = sys.argv[1], sys.argv[2]
plan = json.load(open(d + "/plan.json"))
records = [json.load(open(f)) for f in glob.glob(d + "/vllm-*.json")]
engines = [p for p in plan["processes"] if p["name"].startswith("engine")]
assert len(records) == len(engines), (len(records), [p["name"] for p in engines])
# Each engine process recorded exactly its plan's argv and environment.
for engine in engines:
    mine = [r for r in records if r["argv"] == engine["argv"]]
    assert len(mine) == 1, (engine["name"], engine["argv"], [r["argv"] for r in records])
    for k, v in engine["env"].items():
        assert mine[0]["env"].get(k) == v, (k, v)
    if "rank" in engine:  # its own GPU only
        assert mine[0]["env"]["CUDA_VISIBLE_DEVICES"] == str(engine["rank"]), mine[0]["env"].get("CUDA_VISIBLE_DEVICES")
res = json.load(open(d + "/result.json"))["summary"]
assert res["failed"] == 0, res
obtained = json.load(open(d + "/placement-obtained.json"))
assert sorted(obtained) == sorted(p["name"] for p in plan["processes"]), obtained
if arm == "dep4":
    assert [p["name"] for p in plan["processes"]] == ["engine", "router"]
if arm == "dep4-rankproc":
    assert [p["name"] for p in plan["processes"]] == ["engine-rank0", "engine-rank1", "engine-rank2", "engine-rank3", "router"]
    # Each rank process was bound to its own rank's CPUs (those of this machine).
    ranks = json.load(open(d + "/placement.json"))["ranks"]
    assert len({tuple(r["cpus"]) if isinstance(r["cpus"], list) else r["cpus"] for r in ranks}) == 4, ranks
    log = open(d + "/stepd.log").read()
    for r in range(4):
        assert f"started engine-rank{r}" in log, log
if arm.startswith("dep"):
    assert res["sessions_on_one_rank"], res
    assert len(res["ranks_used"]) > 1, res
PY
  check_clean "$name"
done
echo "ok: tp4, tep4, dep4 (engine and rank-process layouts) steps ran the plan"

# 2. Faults fail the step fast and say which process.
fault() {
  local name=$1 limit=$2; shift 2
  local arm=dep4
  if [[ $1 == --arm=* ]]; then arm=${1#--arm=}; shift; fi
  local opts=()  # more --inferencex-* options, then the environment
  while [[ ${1:-} == --inferencex-* ]]; do opts+=("$1"); shift; done
  mkdir -p "$tmp/$name"
  local start end rc
  start=$(date +%s%N)
  env "$@" IX_RESULT_DIR="$tmp/$name" srun --gres=gpu:4 $(step_opts "$arm" 64) --inferencex-ready-timeout=3 "${opts[@]}" \
    sleep 60 >"$tmp/$name/srun.out" 2>"$tmp/$name/srun.err"; rc=$?
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000))
  [[ $rc -ne 0 ]] || fail "$name: srun exit 0"
  [[ $ms -lt $limit ]] || fail "$name: srun took ${ms} ms (limit $limit)"
  [[ -f $tmp/$name/failure.json ]] || { fail "$name: no failure.json"; return; }
  echo "ok: $name: srun exit $rc after ${ms} ms; $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reason"])' "$tmp/$name/failure.json")"
  check_clean "$name"
}
fault engine-core-crash 4000 FAKE_VLLM_CRASH_ENGINE_AFTER_S=0.3
fault api-exit-0 4000 FAKE_VLLM_EXIT0_AFTER_S=0.3
fault router-exit 4000 FAKE_ROUTER_EXIT_AFTER_S=0.5
fault engine-hang 5000 FAKE_VLLM_HANG_AFTER_S=0.3
fault never-ready 8000 FAKE_VLLM_NEVER_READY=1
fault rank-process-crash 4000 --arm=dep4-rankproc FAKE_VLLM_CRASH_ENGINE_AFTER_S=0.3 FAKE_VLLM_FAULT_ONLY_IF_ARG=--data-parallel-rank=2
grep -q '"process":"engine-rank2' "$tmp/rank-process-crash/failure.json" ||
  fail "rank-process crash: failure.json does not name engine-rank2: $(cat "$tmp/rank-process-crash/failure.json")"
grep -q "EngineCore" "$tmp/engine-core-crash/failure.json" || fail "crash: failure.json does not name the EngineCore"
grep -q "not ready" "$tmp/never-ready/srun.err" || fail "never-ready: srun's stderr: $(cat "$tmp/never-ready/srun.err")"

# The mooncake KV offload tier: its master listens on a leased port of the
# range while the step runs (the config file ix-stepd wrote into the result
# directory names it), ready before the engine starts (the fake engine
# connects to it at start-up, as the store does), bound as the engine is,
# and gone after; its death mid-run ends the step within 2 s, named.
mkdir -p "$tmp/mooncake"
IX_RESULT_DIR="$tmp/mooncake" FAKE_MOONCAKE_LISTEN_AFTER_S=0.5 srun --gres=gpu:4 $(step_opts tp4 8) --inferencex-kv-offload=mooncake \
  --inferencex-kv-offload-dram-gb=1424 bash -c 'grep -o "127.0.0.1:[0-9]*" "$IX_RESULT_DIR/mooncake_config.json" >"$IX_RESULT_DIR/addr"
    exec 3<>"/dev/tcp/$(tr : / <"$IX_RESULT_DIR/addr")" && echo up >"$IX_RESULT_DIR/reached"
    cp "$IX_RUN_DIR/placement-obtained.json" "$IX_RUN_DIR/stepd.log" "$IX_RESULT_DIR/"' \
  >"$tmp/mooncake/srun.out" 2>&1 || fail "mooncake: srun failed: $(tail -3 "$tmp/mooncake/srun.out")"
port=$(cut -d: -f2 "$tmp/mooncake/addr" 2>/dev/null)
[[ -f $tmp/mooncake/reached ]] && ((port >= PORT_LO && port <= PORT_HI)) ||
  fail "mooncake: the master was not reachable on a port of $PORT_LO-$PORT_HI (${port:-none})"
grep -q "received a stop signal" "$tmp/mooncake/mooncake_master.log" || fail "mooncake: the master was not stopped"
python3 - "$tmp/mooncake" <<'PY' || fail "mooncake: start order, binding or the engine's connection"
import json, sys
d = sys.argv[1]
log = open(d + "/stepd.log").read()
assert log.index("started mooncake_master") < log.index("started engine"), log
# Two connections: the engine's (kept) and the client's probe.
assert open(d + "/mooncake_master.log").read().count("accepted a connection") >= 2
got = json.load(open(d + "/placement-obtained.json"))
assert got["mooncake_master"].get("cpus") == got["engine"].get("cpus"), got
PY
check_clean mooncake
fault mooncake-master-exit 2600 --arm=tp4 --inferencex-kv-offload=mooncake --inferencex-kv-offload-dram-gb=1424 \
  FAKE_MOONCAKE_EXIT_AFTER_S=0.5
grep -q '"process":"mooncake_master"' "$tmp/mooncake-master-exit/failure.json" ||
  fail "mooncake master exit: failure.json does not name it: $(cat "$tmp/mooncake-master-exit/failure.json")"

# A tier's DRAM that one socket cannot hold beside the Engram tables (DEP4's
# four ranks on NUMA node 0 of the fixture, 4 TiB a socket): refused before
# anything starts, naming the node and both components.
mkdir -p "$tmp/dram-too-big"
IX_RESULT_DIR="$tmp/dram-too-big" srun --gres=gpu:4 $(step_opts dep4 64) --inferencex-kv-offload=vllm-simple \
  --inferencex-kv-offload-dram-gb=4000 true >"$tmp/dram-too-big/srun.out" 2>&1 &&
  fail "dram-too-big: the step ran"
grep -Eq "NUMA node 0 \(4 ranks x 189 GiB engram_tables \+ 4 GPUs x 931\.32 GiB kv_offload_cpu\)" "$tmp/dram-too-big/srun.out" ||
  fail "dram-too-big: srun's output does not name the node and both components: $(cat "$tmp/dram-too-big/srun.out")"
[[ ! -e $tmp/dram-too-big/server.log ]] || fail "dram-too-big: the engine was started"
check_clean dram-too-big

# 3. Two dep4 steps at once on GPUs 0-3 and 4-7: disjoint ports, NUMA 0 and 1.
for i in 1 2; do
  mkdir -p "$tmp/pair$i"
  IX_RESULT_DIR="$tmp/pair$i" srun --gres=gpu:4 $(step_opts dep4 64) \
    bash -c 'echo $IX_PORT_PORT $IX_PORT_ENGINE_PORT $IX_PORT_ROUTER_METRICS_PORT > "$IX_RESULT_DIR/ports"; cp "$IX_RUN_DIR/placement.json" "$IX_RESULT_DIR/"; sleep 2' \
    >"$tmp/pair$i/srun.out" 2>"$tmp/pair$i/srun.err" &
done
wait
python3 - "$tmp" <<'PY' || fail "two concurrent dep4 steps"
import json, sys
t = sys.argv[1]
ports = [set(open(f"{t}/pair{i}/ports").read().split()) for i in (1, 2)]
assert not ports[0] & ports[1], ports
numa = sorted({r["numa"] for r in json.load(open(f"{t}/pair{i}/placement.json"))["ranks"]}.pop() for i in (1, 2))
assert numa == [0, 1], numa
PY
check_clean "pair"
echo "ok: concurrent dep4 steps got disjoint ports and NUMA nodes 0 and 1"

# 4. Bad input fails before anything starts, with the reason on srun's stderr.
if srun --gres=gpu:2 $(step_opts dep4 64) true 2>"$tmp/refused.err"; then fail "dep4 on 2 GPUs ran"; fi
grep -q "refused before anything started" "$tmp/refused.err" || fail "refusal reason missing: $(cat "$tmp/refused.err")"
[[ ! -e $tmp/refused-started ]] || fail "the client ran"
check_clean "refused"
echo "ok: a step that cannot be placed is refused: $(grep -m1 refused "$tmp/refused.err")"

ix_finish step
