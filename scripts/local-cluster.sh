#!/usr/bin/env bash
# local-cluster.sh - a private Slurm cluster for integration tests: one node
# on the host (the default), or N nodes in their own namespaces (--nodes N).
#
# Run with --help for the manual. Everything (configs, munge key, state, spool,
# logs, pid files, sockets, fake GPU device nodes) lives under one directory,
# default <repo>/build/local-cluster. This file holds the interface (usage,
# arguments, settings, status, env, exec); the other commands are in the files
# it sources from scripts/local-cluster/ (processes, nodes, config, layout,
# stop, start).
set -euo pipefail

PROG=${0##*/}
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(dirname "$SCRIPT_DIR")

usage() {
  cat <<EOF
NAME
    $PROG - private Slurm cluster (munge + slurmctld + one or N slurmd)

SYNOPSIS
    $PROG [--dir DIR] [--timeout SECS] [--nodes N] start|restart
    $PROG [--dir DIR] [--timeout SECS] stop|restart-slurmd|status|env
    $PROG [--dir DIR] exec NODE COMMAND [ARG...]
    $PROG --help

DESCRIPTION
    Runs, as root, its own munged, slurmctld and slurmd (Debian slurm-wlm
    22.05) with every file under one directory, on non-default ports, so it
    cannot clash with a site cluster or the distribution's services. The one
    node is named after 'hostname -s', has NodeAddr=127.0.0.1, the CPU layout
    and memory reported by 'slurmd -C', and Gres=gpu:b300:8 backed by character
    devices DIR/dev/nvidia0..7 (major 195). Partition 'debug' is the default.

    With --nodes N (2..32) it runs N nodes ixn1..ixnN instead, each a slurmd
    in its own network namespace (a veth on a bridge; NodeAddr A.B.C.(10+K)
    of IX_NODE_NET, the host A.B.C.1), its own UTS namespace (hostname =
    NodeName) and its own mount namespace with a node-local tmpfs at
    /run/inferencex (the plugin's leases and step directories). slurmctld,
    munged and the client commands stay on the host. Each node has the same
    CPUs, memory and Gres=gpu:b300:8 (the same fake devices); partition
    'debug' holds all of them. slurm.conf then also has MpiParams=ports=
    (IX_MPI_PORTS: every step gets SLURM_STEP_RESV_PORTS, the same on all
    its nodes; --resv-ports=K asks for K ports, a bare --resv-ports for
    none) and SchedulerParameters=bf_interval=1. Node names do not resolve:
    use NodeAddr ('scontrol show node'). A node has no name server (its
    /etc/resolv.conf names none), so a lookup /etc/hosts cannot answer fails
    at once. See docs/LOCAL_CLUSTER.md.

COMMANDS
    start    Regenerate all configs, start munged, slurmctld and slurmd with
             fresh state, and return once sinfo shows every node idle. One
             node unless --nodes says otherwise. If the cluster is already
             fully running this is a no-op that says so (use restart to pick
             up a new plugin, config or node count); a partly running or
             stale cluster is stopped first, then started fresh.
    stop     Cancel all jobs, stop slurmd, slurmctld, every slurmstepd of this
             cluster (and its tasks) and munged; with N nodes also every
             process left in the nodes' namespaces, which takes the
             namespaces, their mounts and veths with them, and the bridge.
             Fail if any process or interface is left.
    restart  stop, then start with the same number of nodes as before
             (remembered in DIR/run/nodes) unless --nodes is given.
    restart-slurmd
             Stop slurmd alone (SIGTERM; every node's, one after the other)
             and start it again with the same configuration and spool (and
             in the same node namespaces), as an admin restarting the daemon
             while jobs run: running steps and their slurmstepd stay.
             Returns once the nodes respond again.
    status   Print each daemon's state (each node's) and, when up, sinfo.
             Exit 0 when all daemons run and the controller answers, 3 when
             nothing runs, 1 otherwise.
    env      Print 'export SLURM_CONF=DIR/etc/slurm.conf'. Use as
                 eval "\$($PROG env)"
             Client commands need it: there is no /etc/slurm/slurm.conf.
    exec NODE COMMAND [ARG...]
             Run COMMAND in node NODE's namespaces (its network, hostname
             and /run/inferencex), as its slurmd and tasks see them; exit
             with COMMAND's status. On the one-node cluster (NODE = its
             name) it runs COMMAND on the host.

OPTIONS
    --dir DIR       Cluster directory (env IX_CLUSTER_DIR;
                    default <repo>/build/local-cluster).
    --timeout SECS  Bound on the start-up wait (env IX_START_TIMEOUT; 30).
    --nodes N       start/restart: N nodes (1..32; 1 = the single node on the
                    host, the default for start; restart keeps the last).
    -h, --help      This text.

ENVIRONMENT
    IX_CLUSTER_DIR      cluster directory, as --dir.
    IX_SLURMCTLD_PORT   SlurmctldPort (default 16817).
    IX_SLURMD_PORT      SlurmdPort (default 16818).
    IX_SPANK_PLUGIN     SPANK plugin to load (default
                        <repo>/build/spank_plugin/spank_inferencex.so).
    IX_RECIPE_DIR       recipe_dir= argument of the plugin (default <repo>/recipes).
    IX_SPANK_MODE       'required' (default) or 'optional' in plugstack.conf.
    IX_SPANK_ARGS       more plugin arguments for plugstack.conf, e.g.
                        "topology=/path/b300.xml memlock=keep".
    IX_SPANK_BEFORE     plugstack.conf lines listed before the plugin, e.g. a
                        container plugin ("required /usr/lib/slurm/spank_pyxis.so");
                        several lines separated by ';'.
    IX_START_TIMEOUT    as --timeout.
    IX_NODE_NET         N nodes: their /24, A.B.C.0/24 of a private range
                        (default 10.77.0.0/24); must be unused on the host.
                        The bridge is ixbrXXXXXX, the veths ixvXXXXXXnK
                        (XXXXXX: A.B.C in hex).
    IX_MPI_PORTS        N nodes: MpiParams=ports=LO-HI (default 30000-30999:
                        outside the kernel's ephemeral range and the
                        plugin's port_range).

FILES (under DIR)
    etc/slurm.conf etc/gres.conf etc/plugstack.conf   generated at every start
    munge/      munge.key (kept), munge.socket.2, munged.pid, munged.log, seed
    spool/      slurmctld state and slurmd spool (wiped at every start)
    log/        slurmctld.log slurmd.log jobcomp.txt *.out (daemon stderr)
                (N nodes: slurmd-ixnK.log, node-ixnK.out)
    run/        slurmctld.pid slurmd.pid, nodes (the kind of the last start)
                (N nodes: slurmd-ixnK.pid, node-ixnK.pid: the node's holder)
    dev/        nvidia0..7 fake GPU device nodes
    tmp/        TmpFS

EXIT STATUS
    0 success; 1 failure (message and log tails on stderr); 2 usage error;
    3 (status only) cluster stopped.
EOF
}

die() { echo "$PROG: $*" >&2; exit 1; }
usage_error() { echo "$PROG: $*" >&2; echo "Try '$PROG --help'." >&2; exit 2; }
say() { echo "$PROG: $*"; }

# ---------------------------------------------------------------- arguments
CMD=
DIR=${IX_CLUSTER_DIR:-$REPO/build/local-cluster}
TIMEOUT=${IX_START_TIMEOUT:-30}
NODES_ARG=
EXEC_NODE=
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --dir) [[ $# -ge 2 ]] || usage_error "--dir needs an argument"; DIR=$2; shift 2 ;;
    --dir=*) DIR=${1#--dir=}; shift ;;
    --timeout) [[ $# -ge 2 ]] || usage_error "--timeout needs an argument"; TIMEOUT=$2; shift 2 ;;
    --timeout=*) TIMEOUT=${1#--timeout=}; shift ;;
    --nodes) [[ $# -ge 2 ]] || usage_error "--nodes needs an argument"; NODES_ARG=$2; shift 2 ;;
    --nodes=*) NODES_ARG=${1#--nodes=}; shift ;;
    start|stop|restart|restart-slurmd|status|env|exec)
      [[ -z $CMD ]] || usage_error "only one command allowed (got '$CMD' and '$1')"
      CMD=$1; shift
      if [[ $CMD == exec ]]; then
        # The rest is the node and its command, not ours to parse.
        [[ $# -ge 2 ]] || usage_error "exec needs a node and a command"
        EXEC_NODE=$1; shift
        break
      fi ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ -n $CMD ]] || usage_error "missing command (start|stop|restart|restart-slurmd|status|env|exec)"
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || usage_error "timeout must be a positive integer (got '$TIMEOUT')"
if [[ -n $NODES_ARG ]]; then
  [[ $CMD == start || $CMD == restart ]] || usage_error "--nodes is for start and restart ($CMD uses the node count of the last start)"
fi

CTLD_PORT=${IX_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${IX_SLURMD_PORT:-16818}
PLUGIN=${IX_SPANK_PLUGIN:-$REPO/build/spank_plugin/spank_inferencex.so}
RECIPE_DIR=${IX_RECIPE_DIR:-$REPO/recipes}
SPANK_MODE=${IX_SPANK_MODE:-required}
MPI_PORTS=${IX_MPI_PORTS:-30000-30999}

# Paths end up unquoted in slurm.conf, gres.conf (a hostlist expression) and
# plugstack.conf, so only a conservative character set is accepted.
SAFE_PATH='^/[A-Za-z0-9._/+-]*$'
[[ $DIR == /* ]] || DIR=$PWD/$DIR
DIR=$(realpath -m -- "$DIR")
[[ $DIR =~ $SAFE_PATH ]] || die "cluster dir '$DIR' has characters outside [A-Za-z0-9._/+-]; choose another --dir"
[[ $DIR != / ]] || die "cluster dir must not be /"

ETC=$DIR/etc
CONF=$ETC/slurm.conf
MUNGE_DIR=$DIR/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
MUNGE_KEY=$MUNGE_DIR/munge.key
MUNGE_PID=$MUNGE_DIR/munged.pid
MUNGE_LOG=$MUNGE_DIR/munged.log
MUNGE_SEED=$MUNGE_DIR/munged.seed
LOG=$DIR/log
RUN=$DIR/run
SPOOL=$DIR/spool
DEV=$DIR/dev
CTLD_PID=$RUN/slurmctld.pid
CTLD_LOG=$LOG/slurmctld.log
# slurmd is started with this variable; slurmstepd inherits it, which is how
# this cluster's step daemons are told apart from a site cluster's (their
# command line is only "slurmstepd: [JOB.STEP]").
MARKER=IX_LOCAL_CLUSTER_DIR=$DIR

export SLURM_CONF=$CONF
# Client commands must not pick up settings of an enclosing job or user.
unset SLURM_JOB_ID SLURM_JOBID SLURM_CLUSTERS SQUEUE_FORMAT SINFO_FORMAT 2>/dev/null || true

NODE=$(hostname -s)
[[ $NODE =~ ^[A-Za-z0-9][A-Za-z0-9-]*$ ]] || die "short hostname '$NODE' is not usable as a Slurm node name"

# ---------------------------------------------------------------- helpers
# The commands live in sourced files of one concept each; they use the
# settings and paths above.
# shellcheck source=scripts/local-cluster/processes.sh
source "$SCRIPT_DIR/local-cluster/processes.sh"
# shellcheck source=scripts/local-cluster/nodes.sh
source "$SCRIPT_DIR/local-cluster/nodes.sh"
# shellcheck source=scripts/local-cluster/config.sh
source "$SCRIPT_DIR/local-cluster/config.sh"
# shellcheck source=scripts/local-cluster/layout.sh
source "$SCRIPT_DIR/local-cluster/layout.sh"
# shellcheck source=scripts/local-cluster/stop.sh
source "$SCRIPT_DIR/local-cluster/stop.sh"
# shellcheck source=scripts/local-cluster/start.sh
source "$SCRIPT_DIR/local-cluster/start.sh"

# ---------------------------------------------------------------- shared
ctld_answers() { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }

# node_state [NAME]: sinfo's state of the node (default: the first).
node_state() { timeout 5 sinfo -h -N -n "${1:-${NODE_NAMES[0]}}" -o %t 2>/dev/null | head -n 1; }

tail_logs() {
  local f
  for f in "$@"; do
    [[ -s $f ]] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 20 "$f" >&2
  done
}

require_root() {
  [[ $(id -u) -eq 0 ]] || die "$CMD must run as root (the daemons run as root, SlurmUser=root)"
}

require_tools() {
  local t missing=()
  for t in munged munge unmunge slurmctld slurmd slurmstepd sinfo scontrol squeue scancel ss mknod; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  [[ ${#missing[@]} -eq 0 ]] || die "missing programs: ${missing[*]} (run scripts/bootstrap.sh)"
}

# ---------------------------------------------------------------- status
# status_line NAME PID [MORE]: "NAME running (pid PID[, MORE])" or "NAME stopped"
status_line() {
  if [[ -n $2 ]]; then
    printf '%-10s running (pid %s%s)\n' "$1" "$2" "${3:+, $3}"
  else
    printf '%-10s stopped\n' "$1"
  fi
}

do_status() {
  local n=0 up=0 name pid
  for name in munged slurmctld; do
    n=$((n + 1))
    pid=$(daemon_pid "$name")
    [[ -z $pid ]] || up=$((up + 1))
    status_line "$name" "$pid"
  done
  # One node: its slurmd as always. N nodes: each node's slurmd, with its
  # holder and address (the node is up when both run).
  for name in "${NODE_NAMES[@]}"; do
    n=$((n + 1))
    pid=$(daemon_pid slurmd "$name")
    if [[ $MULTI -eq 0 ]]; then
      [[ -z $pid ]] || up=$((up + 1))
      status_line slurmd "$pid"
      continue
    fi
    local holder
    holder=$(holder_pid "$name")
    [[ -z $pid || -z $holder ]] || up=$((up + 1))
    if [[ -n $pid ]]; then
      status_line "$name" "$pid" "addr $(node_addr "$name"), namespaces of holder ${holder:-(none)}"
    elif [[ -n $holder ]]; then
      printf '%-10s stopped (slurmd; namespaces of holder %s)\n' "$name" "$holder"
    else
      status_line "$name" ""
    fi
  done
  local stepds
  stepds=$(cluster_pids slurmstepd | tr '\n' ' ')
  if [[ -n $stepds ]]; then
    printf '%-10s running (pids %s)\n' slurmstepd "${stepds% }"
  else
    printf '%-10s none\n' slurmstepd
  fi
  echo "dir        $DIR"
  echo "SLURM_CONF $CONF"
  if [[ $up -eq 0 && -z $stepds && -z $(holder_pids) ]]; then
    return 3
  fi
  if [[ $up -eq $n ]] && ctld_answers; then
    timeout 5 sinfo -o '%10P %5a %10l %5D %8t %12G %N' || return 1
    return 0
  fi
  [[ $up -eq $n ]] && echo "slurmctld does not answer 'scontrol ping'"
  return 1
}

# ---------------------------------------------------------------- exec
do_exec() {
  require_root
  local ok=0 name
  for name in "${NODE_NAMES[@]}"; do [[ $name == "$EXEC_NODE" ]] && ok=1; done
  [[ $ok -eq 1 ]] || die "exec: no node '$EXEC_NODE' in the cluster in $DIR (nodes: ${NODE_NAMES[*]})"
  if [[ $MULTI -eq 0 ]]; then exec "$@"; fi
  local pid
  pid=$(holder_pid "$EXEC_NODE")
  [[ -n $pid ]] || die "exec: node $EXEC_NODE is not running (no holder of its namespaces)"
  exec nsenter -t "$pid" --net --uts --mount --root --wd=/ -- "$@"  # root, wd: node_exec
}

# ---------------------------------------------------------------- main
# Every command starts from the kind of the last start; start and restart
# then switch to the kind they start (do_start).
[[ -z $NODES_ARG ]] || check_nodes_arg "$NODES_ARG"
KIND=$(read_kind) || exit 1
# shellcheck disable=SC2086  # "N NET"
set_kind $KIND

case $CMD in
  start) do_start "$NODES_ARG" ;;
  stop) require_root; do_stop ;;
  restart) require_root; do_stop quiet || die "stop failed"; do_start "${NODES_ARG:-$NODES}" ;;
  restart-slurmd) do_restart_slurmd ;;
  status) do_status ;;
  env) printf 'export SLURM_CONF=%q\n' "$CONF" ;;
  exec) do_exec "$@" ;;
esac
