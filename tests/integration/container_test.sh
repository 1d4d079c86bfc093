#!/usr/bin/env bash
# Job steps in a container, on the local cluster with fake_pyxis.so (the Pyxis
# double, tests/fakes/README.md) listed before the plugin in plugstack.conf.
# The image (tests/fakes/make_image.sh) has the fake engine, router and client
# and a shell, but no ix-stepd and no libyaml: the plugin must bring ix-stepd
# itself. Only the case's result directory is mounted.
#
# Cases: the double alone (no --inferencex-*); tp4, dep4 and dep4-rankproc
# steps; an EngineCore crash mid-run; scancel of a running step; a client that
# exits at once; then, with the double listed AFTER the plugin, a step that
# must fail naming the plugstack order. After every case: srun's exit status,
# the engine, EngineCores and router ran in the container's mount namespace
# (recorded from inside the step by probe.sh), no server process left, no
# port of the plugin's range listening, no lease left, the container's rootfs
# removed.
#
# The script restarts the cluster twice with its own plugstack.conf and
# restores the one it found (scripts/local-cluster.sh restart) when it exits.
# Needs what the CTest fixture exports (IX_CLUSTER_DIR, SLURM_CONF,
# IX_SPANK_PLUGIN, IX_SPANK_ARGS, IX_RECIPE_DIR, IX_FAKES_BIN_DIR, IXCTL,
# IX_SOURCE_DIR) and IX_FAKE_PYXIS (fake_pyxis.so). port_range= and
# lease_dir= in IX_SPANK_ARGS are honoured. Exit 0 when every check passed.
set -uo pipefail
for v in IX_CLUSTER_DIR SLURM_CONF IX_SPANK_PLUGIN IX_FAKES_BIN_DIR IXCTL IX_SOURCE_DIR IX_FAKE_PYXIS; do
  [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set"; exit 1; }
done
RECIPE=dsv41flash-fp4-b300-vllm
CLUSTER=$IX_SOURCE_DIR/scripts/local-cluster.sh
export PATH=$IX_FAKES_BIN_DIR:$PATH
T0=$SECONDS

# The plugin's port range and lease directory, as plugstack.conf gives them.
PORT_LO=20000 PORT_HI=29999 LEASE_DIR=/run/inferencex/ports
for a in ${IX_SPANK_ARGS:-}; do
  case $a in
    port_range=*) PORT_LO=${a#port_range=}; PORT_HI=${PORT_LO#*-}; PORT_LO=${PORT_LO%-*} ;;
    lease_dir=*) LEASE_DIR=${a#lease_dir=} ;;
  esac
done

tmp=$(mktemp -d /tmp/ix-container-test.XXXXXX)
chmod 0755 "$tmp"
RUNTIME=$tmp/pyxis
ORIG_BEFORE=${IX_SPANK_BEFORE-}
ORIG_PLUGIN=$IX_SPANK_PLUGIN
restore() {
  IX_SPANK_BEFORE=$ORIG_BEFORE IX_SPANK_PLUGIN=$ORIG_PLUGIN "$CLUSTER" restart >"$tmp/restore.log" 2>&1 ||
    { echo "FAIL: could not restore the cluster:"; cat "$tmp/restore.log"; }
  rm -rf "$tmp"
}
trap restore EXIT

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# restart_with PLUGSTACK_BEFORE PLUGIN: the cluster with these plugstack lines.
restart_with() {
  if ! IX_SPANK_BEFORE=$1 IX_SPANK_PLUGIN=$2 "$CLUSTER" restart >"$tmp/restart.log" 2>&1; then
    echo "FAIL: cluster restart failed:"; cat "$tmp/restart.log"; exit 1
  fi
}

# ---------------------------------------------------------------- image
IMG=$tmp/image
if ! "$IX_SOURCE_DIR/tests/fakes/make_image.sh" --env "IX_IMAGE_VAR=from the image" "$IMG" \
    "$IX_FAKES_BIN_DIR/vllm" "$IX_FAKES_BIN_DIR/vllm-router" "$IX_FAKES_BIN_DIR/ix-fake-client" \
    bash readlink cat sleep true >"$tmp/image.log" 2>&1; then
  echo "FAIL: make_image.sh: $(cat "$tmp/image.log")"; exit 1
fi
if [[ -n $(find "$IMG" -name 'ix-stepd*' -o -name 'libyaml*') ]]; then
  echo "FAIL: the image has ix-stepd or libyaml"; exit 1
fi

# probe.sh runs in the step (the client's first command): the mount namespace
# of the client and of every ix-stepd, engine, EngineCore and router process
# whose environment has this case's IX_RESULT_DIR (they inherit it), from the
# container's /proc (the host's, rbound). Bash builtins and readlink only.
cat >"$tmp/probe.sh" <<'EOF'
readlink /proc/self/ns/mnt >"$IX_RESULT_DIR/client.ns"
for p in /proc/[0-9]*; do
  { read -r comm <"$p/comm"; } 2>/dev/null || continue
  case $comm in vllm | vllm-router | ix-stepd | EngineCore_DP*) ;; *) continue ;; esac
  while IFS= read -r -d '' kv; do
    if [[ $kv == "IX_RESULT_DIR=$IX_RESULT_DIR" ]]; then
      ns=$(readlink "$p/ns/mnt" 2>/dev/null) && echo "$comm ${p#/proc/} $ns"
      break
    fi
  done 2>/dev/null <"$p/environ"
done >"$IX_RESULT_DIR/procs.txt"
EOF
HOST_NS=$(readlink /proc/self/ns/mnt)

# ---------------------------------------------------------------- checks after a case
# Server processes of case directory $1 still alive: recorded by its probe,
# carrying its IX_RESULT_DIR, or in its container's mount namespace.
servers_of() {
  local res=$1 cns pid
  cns=$(cat "$res/client.ns" 2>/dev/null)
  for pid in $({ pgrep -x 'vllm|vllm-router|ix-stepd'; pgrep '^EngineCore_DP'; } 2>/dev/null | sort -u); do
    if grep -q " $pid " "$res/procs.txt" 2>/dev/null || grep -qzx "IX_RESULT_DIR=$res" "/proc/$pid/environ" 2>/dev/null ||
       [[ -n $cns && $(readlink "/proc/$pid/ns/mnt" 2>/dev/null) == "$cns" ]]; then
      echo "$pid($(cat "/proc/$pid/comm" 2>/dev/null))"
    fi
  done
}
listening() {
  ss -Hltn 2>/dev/null | awk -v lo="$PORT_LO" -v hi="$PORT_HI" '{n = split($4, a, ":"); p = a[n] + 0; if (p >= lo && p <= hi) print $4}' | sort -u | tr '\n' ' '
}
leases() { "$IXCTL" ports list --json --lease-dir "$LEASE_DIR" 2>&1; }

# check_clean NAME RES: nothing of the step outlives it. Whatever is left is
# reported, then killed and released so that the next case starts clean.
check_clean() {
  local name=$1 res=$2 i left ports lease
  for ((i = 0; i < 50; i++)); do
    left=$(servers_of "$res"); ports=$(listening); lease=$(leases)
    [[ -z $left && -z $ports && $lease == '{"leases":[]}' ]] && break
    sleep 0.1
  done
  if [[ -n $left ]]; then
    fail "$name: server processes left: $left"
    for i in $left; do kill -KILL "${i%%(*}" 2>/dev/null; done
  fi
  [[ -z $ports ]] || fail "$name: ports of $PORT_LO-$PORT_HI still listening: $ports"
  if [[ $lease != '{"leases":[]}' ]]; then
    fail "$name: leases left: $lease"
    for o in $(grep -o '"owner":"[^"]*"' <<<"$lease" | cut -d'"' -f4 | sort -u); do
      "$IXCTL" ports release --owner "$o" --lease-dir "$LEASE_DIR" >/dev/null 2>&1
    done
  fi
  local rootfs
  rootfs=$(find "$RUNTIME" -mindepth 2 -maxdepth 2 -name 'pyxis_*' 2>/dev/null)
  if [[ -n $rootfs ]]; then
    fail "$name: container rootfs left: $rootfs"
    while read -r i; do rm -rf "$i"; done <<<"$rootfs"
  fi
}

# check_ns NAME RES ARM: engine, EngineCores (and router for dep arms) were
# seen by the probe, all in the client's mount namespace, not the host's.
check_ns() {
  local name=$1 res=$2 arm=$3
  python3 - "$res" "$arm" "$HOST_NS" <<'PY' || fail "$name: servers not (all) in the container's mount namespace: $(tr '\n' ';' <"$res/procs.txt" 2>/dev/null)"
import sys
res, arm, host = sys.argv[1:]
cns = open(res + "/client.ns").read().strip()
assert cns != host, ("client in the host's mount namespace", cns)
procs = [l.split() for l in open(res + "/procs.txt") if l.strip()]
by = lambda pred: [p for p in procs if pred(p[0])]
engines = by(lambda c: c == "vllm")
cores = by(lambda c: c.startswith("EngineCore_DP"))
routers = by(lambda c: c == "vllm-router")
want = {"tp4": 1, "dep4": 1, "dep4-rankproc": 4}[arm]
assert len(engines) == want, ("engine processes seen", procs)
assert cores, ("no EngineCore seen", procs)
if arm.startswith("dep"):
    assert len(routers) == 1, ("router processes seen", procs)
outside = [p for p in engines + cores + routers if p[2] != cns]
assert not outside, ("outside the container", cns, outside)
PY
  local stepd
  stepd=$(awk '$1 == "ix-stepd" {print $3}' "$res/procs.txt" 2>/dev/null | sort -u | tr '\n' ' ')
  echo "     $name: client/servers in $(cat "$res/client.ns" 2>/dev/null) (host $HOST_NS); ix-stepd in: ${stepd:-not seen}"
}

# run_step NAME ARM CONC CLIENT [ENV...]: srun of one step in the container,
# its result directory the only mount; sets RC and MS.
run_step() {
  local name=$1 arm=$2 conc=$3 client=$4; shift 4
  local res=$tmp/$name start
  mkdir -p "$res"; cp "$tmp/probe.sh" "$res/"
  local opts=(--container-image="$IMG" --container-mounts="$res:$res" --no-container-mount-home
              --container-remap-root --container-workdir="$res" --no-container-entrypoint)
  start=$(now_ms)
  env "$@" IX_RESULT_DIR="$res" FAKE_VLLM_RECORD_DIR="$res" timeout 30 \
    srun --gres=gpu:4 --inferencex-recipe=$RECIPE --inferencex-arm="$arm" --inferencex-conc="$conc" \
    "${opts[@]}" bash -c "bash probe.sh; $client" >"$res/srun.out" 2>"$res/srun.err"
  RC=$?; MS=$(($(now_ms) - start))
  return $RC
}
err_of() { head -c 600 "$tmp/$1/srun.err" | tr '\n' '|'; }

restart_with "required $IX_FAKE_PYXIS runtime_dir=$RUNTIME" "$IX_SPANK_PLUGIN"
echo "ok: cluster restarted with fake_pyxis.so before the plugin ($((SECONDS - T0)) s)"

# ---------------------------------------------------------------- 0. the double alone
res=$tmp/double; mkdir -p "$res"
LANG=C.UTF-8 IX_IMAGE_VAR=host timeout 30 srun "--container-image=$IMG" "--container-mounts=$res:$res" --container-workdir="$res" \
  --container-remap-root --no-container-entrypoint \
  bash -c 'cat /proc/self/mountinfo >mountinfo; export -p >env; echo "$PWD" >pwd; readlink /proc/self/ns/mnt >ns' \
  >"$res/srun.out" 2>"$res/srun.err"
rc=$?
if [[ $rc -ne 0 ]]; then
  fail "double: a plain container step failed ($rc): $(err_of double)"
else
  python3 - "$res" "$HOST_NS" "$RUNTIME" <<'PY' && ok "double: a plain step ran in the container (rootfs copy, /proc /dev /sys, the mount, image env, workdir)" || fail "double: container check"
import sys
res, host, runtime = sys.argv[1:]
mounts = [l.split() for l in open(res + "/mountinfo")]
root = [m for m in mounts if m[4] == "/"]
assert len(root) == 1 and root[0][3].startswith(runtime + "/"), root
points = {m[4] for m in mounts}
assert {"/proc", "/dev", "/sys", res} <= points, points
assert open(res + "/ns").read().strip() != host
env = open(res + "/env").read()
assert 'PATH="/usr/local/bin:/usr/bin:/bin"' in env, env
assert 'IX_IMAGE_VAR="from the image"' in env, env
assert "LANG=" not in env, env
assert open(res + "/pwd").read().strip() == res
PY
fi
check_clean double "$res"

# ---------------------------------------------------------------- 1. the arms
for point in "tp4 8" "dep4 32" "dep4-rankproc 32"; do
  read -r arm conc <<<"$point"
  run_step "$arm" "$arm" "$conc" 'ix-fake-client --sessions 6 --turns 3 --out "$IX_RESULT_DIR/result.json"'
  if [[ $RC -ne 0 ]]; then
    fail "$arm: srun exit $RC after $MS ms: $(err_of "$arm")"
  else
    python3 - "$tmp/$arm/result.json" "$arm" <<'PY' && ok "$arm: step in the container passed ($MS ms)" || fail "$arm: client result"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["failed"] == 0, s
if sys.argv[2].startswith("dep"):
    assert s["sessions_on_one_rank"] and len(s["ranks_used"]) > 1, s
PY
    check_ns "$arm" "$tmp/$arm" "$arm"
  fi
  check_clean "$arm" "$tmp/$arm"
done

# ---------------------------------------------------------------- 2. EngineCore crash mid-run
# (1 s after ready: the probe has seen the EngineCores by then)
run_step crash dep4 64 'sleep 60' FAKE_VLLM_CRASH_ENGINE_AFTER_S=1
if [[ ! -f $tmp/crash/procs.txt ]]; then
  fail "crash: the step never got to its client (srun exit $RC after $MS ms): $(err_of crash)"
elif [[ $RC -eq 0 || $MS -ge 6000 ]]; then
  fail "crash: srun exit $RC after $MS ms (want non-zero within 6000 ms): $(err_of crash)"
else
  ok "crash: srun exit $RC after $MS ms"
fi
if [[ -f $tmp/crash/procs.txt ]]; then check_ns crash "$tmp/crash" dep4; fi
grep -qs EngineCore "$tmp/crash/failure.json" || fail "crash: no failure.json naming the EngineCore in the result directory"
check_clean crash "$tmp/crash"

# ---------------------------------------------------------------- 3. scancel of a running step
res=$tmp/scancel
run_step scancel tp4 8 'echo "$SLURM_JOB_ID.$SLURM_STEP_ID" >started; sleep 60' &
srun_pid=$!
for ((i = 0; i < 200; i++)); do [[ -s $res/started ]] && break; kill -0 $srun_pid 2>/dev/null || break; sleep 0.1; done
if [[ -s $res/started ]]; then
  start=$(now_ms)
  scancel "$(cat "$res/started")"
  wait $srun_pid; rc=$?
  ms=$(($(now_ms) - start))
  if [[ $rc -eq 0 || $ms -ge 10000 ]]; then
    fail "scancel: srun exit $rc ${ms} ms after scancel (want non-zero within 10 s)"
  else
    ok "scancel: srun exit $rc ${ms} ms after scancel"
  fi
  check_ns scancel "$res" tp4
else
  wait $srun_pid; rc=$?
  fail "scancel: the client never started (srun exit $rc): $(err_of scancel)"
fi
check_clean scancel "$res"

# ---------------------------------------------------------------- 4. a client that exits at once
run_step early-exit tp4 8 'exit 0'
if [[ $RC -ne 0 ]]; then fail "early-exit: srun exit $RC after $MS ms: $(err_of early-exit)"; else
  ok "early-exit: srun exit 0 ($MS ms)"; check_ns early-exit "$tmp/early-exit" tp4; fi
check_clean early-exit "$tmp/early-exit"

# ---------------------------------------------------------------- 5. the double AFTER the plugin
recipe_dir=${IX_RECIPE_DIR:-$IX_SOURCE_DIR/recipes}
restart_with "required $IX_SPANK_PLUGIN recipe_dir=$recipe_dir ${IX_SPANK_ARGS:-};required $IX_FAKE_PYXIS runtime_dir=$RUNTIME" \
  "$tmp/no-plugin-here.so"
run_step wrong-order tp4 8 'ix-fake-client --sessions 2 --turns 1 --out "$IX_RESULT_DIR/result.json"'
if [[ $RC -eq 0 ]]; then
  fail "wrong-order: the step ran with the double after the plugin (srun exit 0)"
elif ! grep -qi plugstack "$tmp/wrong-order/srun.err"; then
  fail "wrong-order: srun exit $RC but stderr does not mention plugstack: $(err_of wrong-order)"
else
  ok "wrong-order: refused: $(grep -im1 plugstack "$tmp/wrong-order/srun.err")"
fi
if [[ -s $tmp/wrong-order/procs.txt ]]; then  # how far it got, for the record
  echo "     wrong-order: the client (in $(cat "$tmp/wrong-order/client.ns")) saw: $(tr '\n' ';' <"$tmp/wrong-order/procs.txt")"
fi
check_clean wrong-order "$tmp/wrong-order"

echo "container: $((SECONDS - T0)) s (restoring the cluster follows)"
[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
echo "container: all checks passed"
