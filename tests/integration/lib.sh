# shellcheck shell=bash disable=SC2034,SC2013  # variables for the sourcing script; words on purpose
# Helpers shared by the integration scripts; source it, do not run it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# What it sets:
#   PORT_LO PORT_HI LEASE_DIR RUN_DIR  the plugin's port range, lease and run
#       directories as IX_SPANK_ARGS (plugstack.conf) gives them, else the
#       plugin's defaults.
#   IX_TEST_TAG (exported)  a value unique to this run of the script. srun
#       passes the environment on, so every task, ix-stepd, server and client
#       of the script's steps carries it (with the task's SLURM_STEP_ID): the
#       checks below look only at those processes, never at another test's.
#   failures  the count fail() increments; ix_finish reports it.
#   PATH  IX_FAKES_BIN_DIR first, so recipes run the fake engine/router/client.
#
# What it defines: fail ok now_ms ix_require_env ix_tagged ix_servers
# ix_listening ix_leases check_clean ix_finish, and for a cluster of several
# nodes of the script's own: ix_nodes_start, lc, ix_nodes_stop. Safe under set -e: the
# checks count failures, they do not return them. Needs root (reads other
# users' /proc/PID/environ) and what the CTest fixture exports.

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ix_require_env VAR...: exit at once, naming the variable, when one is unset.
ix_require_env() {
  local v
  for v in "$@"; do
    [[ -n ${!v:-} ]] || { echo "FAIL: $v is not set (run under the CTest fixture or export it)"; exit 1; }
  done
}

# The plugin's settings, as plugstack.conf gives them (plugin defaults else).
PORT_LO=20000 PORT_HI=29999 LEASE_DIR=/run/inferencex/ports RUN_DIR=/run/inferencex/steps
for _ix_a in ${IX_SPANK_ARGS:-}; do
  case $_ix_a in
    port_range=*) PORT_LO=${_ix_a#port_range=}; PORT_HI=${PORT_LO#*-}; PORT_LO=${PORT_LO%-*} ;;
    lease_dir=*) LEASE_DIR=${_ix_a#lease_dir=} ;;
    run_dir=*) RUN_DIR=${_ix_a#run_dir=} ;;
  esac
done
unset _ix_a

export IX_TEST_TAG=${IX_TEST_TAG:-${0##*/}.$$.$(now_ms)}
[[ -z ${IX_FAKES_BIN_DIR:-} ]] || export PATH=$IX_FAKES_BIN_DIR:$PATH

# ix_tagged PID: the process carries this script's IX_TEST_TAG.
ix_tagged() { grep -qzx "IX_TEST_TAG=$IX_TEST_TAG" "/proc/$1/environ" 2>/dev/null; }

# ix_servers: "PID(comm)" of every live process of this script's steps: its
# tag and a SLURM_STEP_ID (set in the task, inherited by ix-stepd, engines,
# EngineCores, router, client and whatever the client started; srun and
# this shell have none). A zombie's environment reads empty: it is gone.
ix_servers() {
  local f pid
  # Two greps over all of /proc, not two per process: this runs in polls.
  for f in $(grep -lzx "IX_TEST_TAG=$IX_TEST_TAG" /proc/[0-9]*/environ 2>/dev/null |
             xargs -r grep -lz '^SLURM_STEP_ID=' 2>/dev/null); do
    pid=${f#/proc/}; pid=${pid%/environ}
    echo "$pid($(cat "/proc/$pid/comm" 2>/dev/null))"
  done
  return 0
}

# ix_listening: ports of PORT_LO-PORT_HI listened on by this script's steps.
ix_listening() {
  local line port pid
  while read -r line; do
    port=$(awk '{n = split($4, a, ":"); print a[n] + 0}' <<<"$line")
    ((port >= PORT_LO && port <= PORT_HI)) || continue
    for pid in $(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2 | sort -u); do
      if ix_tagged "$pid"; then echo "$port"; break; fi
    done
  done < <(ss -Hltnp 2>/dev/null) | sort -un | tr '\n' ' '
  return 0
}

# ix_leases: the lease table of LEASE_DIR as `ixctl ports list --json` prints it.
ix_leases() { "$IXCTL" ports list --json --lease-dir "$LEASE_DIR" 2>&1; }

# check_clean NAME: nothing of the script's steps outlives them: no server,
# ix-stepd or client process, no port of the range listening, no lease. Waits
# up to 5 s, then reports what is left (fail) and kills and releases it, so
# that the next case starts clean. Returns 0 either way.
check_clean() {
  local name=$1 i left ports lease o
  for ((i = 0; i < 50; i++)); do
    left=$(ix_servers); ports=$(ix_listening); lease=$(ix_leases)
    if [[ -z $left && -z $ports && $lease == '{"leases":[]}' ]]; then return 0; fi
    sleep 0.1
  done
  if [[ -n $left ]]; then
    fail "$name: processes left: $(tr '\n' ' ' <<<"$left")"
    for i in $left; do kill -KILL "${i%%(*}" 2>/dev/null; done
  fi
  [[ -z $ports ]] || fail "$name: ports of $PORT_LO-$PORT_HI still listening: $ports"
  if [[ $lease != '{"leases":[]}' ]]; then
    fail "$name: leases left in $LEASE_DIR: $lease"
    for o in $(grep -o '"owner":"[^"]*"' <<<"$lease" | cut -d'"' -f4 | sort -u); do
      "$IXCTL" ports release --owner "$o" --lease-dir "$LEASE_DIR" >/dev/null 2>&1 || true
    done
  fi
  return 0
}

# ix_nodes_start N: a cluster of N nodes of this script's own
# (scripts/local-cluster.sh start --nodes N) in a new directory, on a free
# controller port pair and an unused /24 of 10.77.250-254.0/24 (never the
# CTest fixture's cluster), with Slurm's reserved ports MPI_LO-MPI_HI; the
# plugin as the fixture loads it. Sets dir, net, ctld and exports
# SLURM_CONF; `lc ARGS` runs local-cluster.sh on it; an EXIT trap stops it
# (ix_nodes_stop; a script that stopped it itself sets _ix_nodes_stopped=1).
# Exits the script when the cluster cannot start.
MPI_LO=30000 MPI_HI=30999
ix_nodes_start() {
  local n=$1 c t0
  _ix_port_free() { [[ -z $(ss -Hltn "sport = :$1" 2>/dev/null) ]]; }
  for ctld in 16857 16867 16877 16887; do
    _ix_port_free "$ctld" && _ix_port_free $((ctld + 1)) && break
  done
  net=
  for c in 250 251 252 253 254; do
    if ! ip -4 -o addr show | grep -q " 10\.77\.$c\." && ! ip -4 route show | grep -q "^10\.77\.$c\."; then
      net=10.77.$c; break
    fi
  done
  [[ -n $net ]] || { echo "FAIL: no free /24 among 10.77.250-254.0/24"; exit 1; }
  dir=$(mktemp -d /tmp/ixmn.XXXXXX)
  export IX_SLURMCTLD_PORT=$ctld IX_SLURMD_PORT=$((ctld + 1)) IX_NODE_NET=$net.0/24
  export IX_MPI_PORTS=$MPI_LO-$MPI_HI SLURM_CONF=$dir/etc/slurm.conf
  unset IX_CLUSTER_DIR
  _ix_nodes_stopped=0
  trap ix_nodes_stop EXIT
  t0=$(now_ms)
  lc --nodes "$n" start || { echo "FAIL: start --nodes $n"; exit 1; }
  ok "started $n nodes in $(($(now_ms) - t0)) ms ($dir, controller port $ctld, $net.0/24)"
}
lc() { "${IX_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}/scripts/local-cluster.sh" --dir "$dir" "$@"; }
# ix_nodes_stop: stops the cluster once; its directory stays when stop
# fails (it holds what a later stop needs, and the logs).
ix_nodes_stop() {
  [[ -n ${dir:-} ]] || return 0
  if [[ $_ix_nodes_stopped -eq 1 ]] || lc stop >/dev/null 2>&1 || lc stop; then
    _ix_nodes_stopped=1
    rm -rf "$dir"
  else
    echo "FAIL: the cluster in $dir did not stop; kept for 'scripts/local-cluster.sh --dir $dir stop'"
  fi
}

# ix_finish NAME: the script's verdict from the failure count; exits.
ix_finish() {
  [[ $failures -eq 0 ]] || { echo "$1: $failures failure(s)"; exit 1; }
  echo "$1: all checks passed"
  exit 0
}
