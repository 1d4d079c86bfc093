#!/usr/bin/env bash
# local-cluster.sh - a private single-node Slurm cluster for integration tests.
#
# Run with --help for the manual. Everything (configs, munge key, state, spool,
# logs, pid files, sockets, fake GPU device nodes) lives under one directory,
# default <repo>/build/local-cluster.
set -euo pipefail

PROG=${0##*/}
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(dirname "$SCRIPT_DIR")

usage() {
  cat <<EOF
NAME
    $PROG - private single-node Slurm cluster (munge + slurmctld + slurmd)

SYNOPSIS
    $PROG [--dir DIR] [--timeout SECS] start|stop|restart|restart-slurmd|status|env
    $PROG --help

DESCRIPTION
    Runs, as root, its own munged, slurmctld and slurmd (Debian slurm-wlm
    22.05) with every file under one directory, on non-default ports, so it
    cannot clash with a site cluster or the distribution's services. The one
    node is named after 'hostname -s', has NodeAddr=127.0.0.1, the CPU layout
    and memory reported by 'slurmd -C', and Gres=gpu:b300:8 backed by character
    devices DIR/dev/nvidia0..7 (major 195). Partition 'debug' is the default.

COMMANDS
    start    Regenerate all configs, start munged, slurmctld and slurmd with
             fresh state, and return once sinfo shows the node idle. If the
             cluster is already fully running this is a no-op that says so
             (use restart to pick up a new plugin or config); a partly running
             or stale cluster is stopped first, then started fresh.
    stop     Cancel all jobs, stop slurmd, slurmctld, every slurmstepd of this
             cluster (and its tasks) and munged; fail if any process is left.
    restart  stop, then start.
    restart-slurmd
             Stop slurmd alone (SIGTERM) and start it again with the same
             configuration and spool, as an admin restarting the daemon
             while jobs run: running steps and their slurmstepd stay.
             Returns once the node responds again.
    status   Print each daemon's state and, when up, sinfo. Exit 0 when all
             daemons run and the controller answers, 3 when nothing runs,
             1 otherwise.
    env      Print 'export SLURM_CONF=DIR/etc/slurm.conf'. Use as
                 eval "\$($PROG env)"
             Client commands need it: there is no /etc/slurm/slurm.conf.

OPTIONS
    --dir DIR       Cluster directory (env IX_CLUSTER_DIR;
                    default <repo>/build/local-cluster).
    --timeout SECS  Bound on the start-up wait (env IX_START_TIMEOUT; 30).
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

FILES (under DIR)
    etc/slurm.conf etc/gres.conf etc/plugstack.conf   generated at every start
    munge/      munge.key (kept), munge.socket.2, munged.pid, munged.log, seed
    spool/      slurmctld state and slurmd spool (wiped at every start)
    log/        slurmctld.log slurmd.log jobcomp.txt *.out (daemon stderr)
    run/        slurmctld.pid slurmd.pid
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
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --dir) [[ $# -ge 2 ]] || usage_error "--dir needs an argument"; DIR=$2; shift 2 ;;
    --dir=*) DIR=${1#--dir=}; shift ;;
    --timeout) [[ $# -ge 2 ]] || usage_error "--timeout needs an argument"; TIMEOUT=$2; shift 2 ;;
    --timeout=*) TIMEOUT=${1#--timeout=}; shift ;;
    start|stop|restart|restart-slurmd|status|env)
      [[ -z $CMD ]] || usage_error "only one command allowed (got '$CMD' and '$1')"
      CMD=$1; shift ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ -n $CMD ]] || usage_error "missing command (start|stop|restart|restart-slurmd|status|env)"
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -gt 0 ]] || usage_error "timeout must be a positive integer (got '$TIMEOUT')"

CTLD_PORT=${IX_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${IX_SLURMD_PORT:-16818}
PLUGIN=${IX_SPANK_PLUGIN:-$REPO/build/spank_plugin/spank_inferencex.so}
RECIPE_DIR=${IX_RECIPE_DIR:-$REPO/recipes}
SPANK_MODE=${IX_SPANK_MODE:-required}

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
SLURMD_PID=$RUN/slurmd.pid
CTLD_LOG=$LOG/slurmctld.log
SLURMD_LOG=$LOG/slurmd.log
# slurmd is started with this variable; slurmstepd inherits it, which is how
# this cluster's step daemons are told apart from a site cluster's (their
# command line is only "slurmstepd: [JOB.STEP]").
MARKER=IX_LOCAL_CLUSTER_DIR=$DIR

export SLURM_CONF=$CONF
# Client commands must not pick up settings of an enclosing job or user.
unset SLURM_JOB_ID SLURM_JOBID SLURM_CLUSTERS SQUEUE_FORMAT SINFO_FORMAT 2>/dev/null || true

NODE=$(hostname -s)
[[ $NODE =~ ^[A-Za-z0-9][A-Za-z0-9-]*$ ]] || die "short hostname '$NODE' is not usable as a Slurm node name"

# ---------------------------------------------------------------- processes
# exe_base PID -> basename of the executable ("" if gone / unreadable)
exe_base() {
  local exe
  # Without root /proc/PID/exe of root's daemons is unreadable; comm (the
  # name the program was started as) still is.
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || exe=$(cat "/proc/$1/comm" 2>/dev/null) || return 0
  exe=${exe% (deleted)}
  exe=${exe##*/}
  # Debian installs the daemons as slurmctld-wlm, slurmd-wlm, slurmstepd-wlm
  # behind alternatives symlinks; /proc/PID/exe shows the real name.
  echo "${exe%-wlm}"
}

# cmdline_has PID STRING: command line contains STRING (fixed string)
cmdline_has() {
  local cmd
  cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") || return 1
  [[ $cmd == *"$2"* ]]
}

environ_has() {
  grep -Fqxz -- "$2" "/proc/$1/environ" 2>/dev/null
}

# cluster_pids NAME...: pids of this cluster's processes with those
# executable names: the cluster dir is in their command line (the equivalent
# of 'pgrep -f DIR', restricted to the real daemons so that shells mentioning
# DIR do not match) or MARKER is in their environment (slurmstepd, whose
# command line is only "slurmstepd: [JOB.STEP]", and slurmctld's helper
# slurmscriptd inherit it).
cluster_pids() {
  local pid base want
  # Candidates: processes named like a Slurm/munge daemon (comm) or whose
  # command line mentions DIR (DIR has only [A-Za-z0-9._/+-]; . and + are
  # escaped for the regex). Then the executable and DIR/MARKER are checked.
  local names='munged|slurmctld|slurmscriptd|slurmd|slurmstepd|slurmctld-wlm|slurmd-wlm|slurmstepd-wlm'
  local dir_re=${DIR//./\\.}
  dir_re=${dir_re//+/\\+}
  for pid in $({ pgrep -x "$names"; pgrep -f -- "$dir_re/"; } 2>/dev/null | sort -un); do
    [[ $pid != "$$" ]] || continue
    base=$(exe_base "$pid")
    [[ -n $base ]] || continue
    for want in "$@"; do
      [[ $base == "$want" ]] || continue
      if cmdline_has "$pid" "$DIR/" || environ_has "$pid" "$MARKER"; then
        echo "$pid"
      fi
    done
  done
}

# daemon_pid NAME: pid of this cluster's main NAME daemon, from its pid file
# when that is valid, else the NAME process whose command line names DIR.
# Prints nothing when it does not run.
daemon_pid() {
  local name=$1 file pid
  case $name in
    munged) file=$MUNGE_PID ;;
    slurmctld) file=$CTLD_PID ;;
    slurmd) file=$SLURMD_PID ;;
  esac
  if [[ -r $file ]]; then
    pid=$(tr -dc 0-9 2>/dev/null <"$file") || pid=
    if [[ -n $pid && $(exe_base "$pid") == "$name" ]] && cmdline_has "$pid" "$DIR/"; then
      echo "$pid"; return 0
    fi
  fi
  for pid in $(cluster_pids "$name"); do
    if cmdline_has "$pid" "$DIR/"; then echo "$pid"; return 0; fi
  done
}

# descendants PID...: all descendants of the given pids
descendants() {
  local -A kids=()
  local p stat rest ppid pid
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    { read -r stat <"$p/stat"; } 2>/dev/null || continue
    rest=${stat##*) }          # fields after "(comm) "
    ppid=${rest#* }; ppid=${ppid%% *}
    kids[$ppid]+="$pid "
  done
  local queue=("$@") cur c
  while [[ ${#queue[@]} -gt 0 ]]; do
    cur=${queue[0]}; queue=("${queue[@]:1}")
    for c in ${kids[$cur]:-}; do echo "$c"; queue+=("$c"); done
  done
}

# alive PID: the process exists and is not a zombie (PID 1 here may be slow to
# reap the daemons it inherits, and kill -0 succeeds on a zombie).
alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# terminate WHAT GRACE PID...: SIGTERM, wait up to GRACE seconds, then SIGKILL
# (with a note on stderr unless WHAT is empty); wait for the exit.
terminate() {
  local what=$1 grace=$2; shift 2
  local pids=() left p i
  for p in "$@"; do [[ -n $p ]] && alive "$p" && pids+=("$p"); done
  [[ ${#pids[@]} -gt 0 ]] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    left=()
    for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
    [[ ${#left[@]} -eq 0 ]] && return 0
    pids=("${left[@]}")
    sleep 0.1
  done
  [[ -z $what ]] || echo "$PROG: $what did not exit within $grace s of SIGTERM; sending SIGKILL to ${pids[*]}" >&2
  kill -KILL "${pids[@]}" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    left=()
    for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
    [[ ${#left[@]} -eq 0 ]] && return 0
    pids=("${left[@]}")
    sleep 0.1
  done
  echo "$PROG: ${what:-process} still alive after SIGKILL: ${pids[*]}" >&2
  return 1
}

ctld_answers() { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }

node_state() { timeout 5 sinfo -h -N -n "$NODE" -o %t 2>/dev/null | head -n 1; }

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

# ---------------------------------------------------------------- stop
do_stop() {
  local quiet=${1:-}
  local any=0 p
  local munged ctld slurmd stepds
  munged=$(daemon_pid munged); ctld=$(daemon_pid slurmctld); slurmd=$(daemon_pid slurmd)
  stepds=$(cluster_pids slurmstepd)
  [[ -n $munged$ctld$slurmd$stepds ]] && any=1

  # Cancel jobs while the controller still answers so steps end cleanly.
  # (Also when slurmd is gone: the controller then still tells waiting srun
  # and sbatch --wait clients that their jobs ended.)
  if [[ -n $ctld ]] && ctld_answers; then
    local jobs
    jobs=$(timeout 5 squeue -h -o %A 2>/dev/null | sort -u || true)
    if [[ -n $jobs ]]; then
      # shellcheck disable=SC2086  # job ids are digits
      timeout 10 scancel $jobs 2>/dev/null || true
      for ((p = 0; p < 100; p++)); do
        [[ -z $slurmd || -z $(cluster_pids slurmstepd) ]] && break
        sleep 0.1
      done
    fi
  fi

  local pids
  mapfile -t pids < <(echo "$slurmd"; cluster_pids slurmd)
  terminate slurmd 10 "${pids[@]}" || true
  mapfile -t pids < <(echo "$ctld"; cluster_pids slurmctld)
  terminate slurmctld 10 "${pids[@]}" || true

  # Step daemons that outlived slurmd (e.g. after slurmd was killed) ignore
  # SIGTERM: end their tasks first, then the step daemons themselves.
  mapfile -t pids < <(cluster_pids slurmstepd)
  if [[ ${#pids[@]} -gt 0 ]]; then
    local tasks
    mapfile -t tasks < <(descendants "${pids[@]}")
    [[ ${#tasks[@]} -eq 0 ]] || terminate "" 3 "${tasks[@]}" || true
    terminate "" 2 "${pids[@]}" || true
  fi

  mapfile -t pids < <(echo "$munged"; cluster_pids munged)
  terminate munged 10 "${pids[@]}" || true

  rm -f "$CTLD_PID" "$SLURMD_PID" "$MUNGE_PID"

  local left
  left=$(cluster_pids munged slurmctld slurmd slurmstepd | sort -u | tr '\n' ' ')
  if [[ -n ${left// /} ]]; then
    echo "$PROG: processes of the cluster in $DIR are still running:" >&2
    # shellcheck disable=SC2086
    ps -o pid,ppid,args -p ${left// /,} >&2 || true
    return 1
  fi
  if [[ $quiet != quiet ]]; then
    if [[ $any -eq 1 ]]; then say "stopped ($DIR)"; else say "not running ($DIR)"; fi
  fi
  return 0
}

# ---------------------------------------------------------------- configs
check_path_lengths() {
  # sun_path holds 107 bytes plus NUL; slurmd's step sockets are
  # SPOOL/slurmd/<node>_<jobid>.<stepid>, worst case 10 digits each (the batch
  # step id is 4294967291). Stay below 100 characters.
  local stepd_sock="$SPOOL/slurmd/${NODE}_4294967291.4294967291"
  local p
  for p in "$MUNGE_SOCKET" "$stepd_sock"; do
    if [[ ${#p} -ge 100 ]]; then
      die "socket path '$p' would be ${#p} characters (must be < 100 for a unix socket); use a shorter --dir / IX_CLUSTER_DIR (it is ${#DIR} characters)"
    fi
  done
}

check_port() {
  local name=$1 port=$2
  [[ $port =~ ^[0-9]+$ && $port -ge 1024 && $port -le 65535 ]] \
    || die "$name must be a port number in 1024..65535 (got '$port')"
  if [[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]]; then
    die "$name $port is already in use: $(ss -Hltnp "sport = :$port" 2>/dev/null | head -n 1)"
  fi
}

# Values from 'slurmd -C', e.g. "NodeName=vm CPUs=2 Boards=1 ... RealMemory=24105"
hw_line() {
  local line out=()
  line=$(slurmd -C 2>/dev/null | head -n 1) || true
  local kv
  for kv in $line; do
    case $kv in
      CPUs=*|Boards=*|SocketsPerBoard=*|CoresPerSocket=*|ThreadsPerCore=*|RealMemory=*) out+=("$kv") ;;
    esac
  done
  [[ ${#out[@]} -eq 6 ]] || die "could not read the node's CPU/memory layout from 'slurmd -C' (got: $line)"
  echo "${out[*]}"
}

plugstack_line() {
  if [[ -e $PLUGIN ]]; then
    [[ $PLUGIN =~ $SAFE_PATH && $RECIPE_DIR =~ $SAFE_PATH ]] \
      || die "plugin path '$PLUGIN' or recipe dir '$RECIPE_DIR' is not absolute or has characters outside [A-Za-z0-9._/+-]"
    local extra=${IX_SPANK_ARGS:-}
    [[ $extra =~ ^[A-Za-z0-9._/+=\ -]*$ ]] || die "IX_SPANK_ARGS has characters outside [A-Za-z0-9._/+= -]"
    echo "$SPANK_MODE $PLUGIN recipe_dir=$RECIPE_DIR${extra:+ $extra}"
  fi
}

# write_configs OUTDIR: slurm.conf, gres.conf, plugstack.conf into OUTDIR
write_configs() {
  local dest=$1 hw pl
  hw=$(hw_line)
  pl=$(plugstack_line)
  cat >"$dest/slurm.conf" <<EOF
# Generated by scripts/local-cluster.sh at every start; edits are lost.
ClusterName=ixlocal
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$SPOOL/slurmctld
SlurmdSpoolDir=$SPOOL/slurmd
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$CTLD_LOG
SlurmdLogFile=$SLURMD_LOG
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$DIR/tmp
PlugStackConfig=$ETC/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
LaunchType=launch/slurm
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.txt
ReturnToService=2
KillWait=5
MinJobAge=60
InactiveLimit=0
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE $hw Gres=gpu:b300:8 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$dest/gres.conf" <<EOF
# Generated by scripts/local-cluster.sh. Fake B300 GPUs: character devices
# with the NVIDIA major number, no autodetection.
AutoDetect=off
Name=gpu Type=b300 File=$DEV/nvidia[0-7]
EOF
  {
    echo "# Generated by scripts/local-cluster.sh at every start."
    local before=${IX_SPANK_BEFORE:-} line lines
    [[ $before =~ ^[A-Za-z0-9._/+=\ \;,:-]*$ ]] || die "IX_SPANK_BEFORE has characters outside [A-Za-z0-9._/+=,:; -]"
    IFS=';' read -ra lines <<<"$before"
    for line in "${lines[@]}"; do
      line=${line#"${line%%[! ]*}"}
      if [[ -n $line ]]; then echo "$line"; fi
    done
    if [[ -n $pl ]]; then
      echo "$pl"
    else
      echo "# No SPANK plugin: $PLUGIN does not exist (build it, then restart)."
    fi
  } >"$dest/plugstack.conf"
}

make_layout() {
  mkdir -p "$DIR" "$ETC" "$LOG" "$RUN" "$SPOOL" "$DEV" "$DIR/tmp" "$MUNGE_DIR"
  chmod 0755 "$DIR" "$ETC" "$LOG" "$RUN" "$SPOOL" "$DEV"
  chmod 1777 "$DIR/tmp"
  # munged insists that its key/socket directory is not writable by group or
  # other; clients need to reach the socket, so 0755.
  chmod 0755 "$MUNGE_DIR"
  rm -rf "$SPOOL/slurmctld" "$SPOOL/slurmd"
  mkdir -m 0755 "$SPOOL/slurmctld" "$SPOOL/slurmd"
  rm -f "$CTLD_PID" "$SLURMD_PID" "$MUNGE_PID" "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"

  local i dev
  for i in 0 1 2 3 4 5 6 7; do
    dev=$DEV/nvidia$i
    if [[ ! -c $dev || $(stat -c '%t:%T' "$dev") != "c3:$(printf %x "$i")" ]]; then
      rm -f "$dev"
      mknod -m 0666 "$dev" c 195 "$i" || die "mknod $dev c 195 $i failed"
    fi
  done

  if [[ ! -s $MUNGE_KEY || $(stat -c %s "$MUNGE_KEY") -lt 32 ]]; then
    rm -f "$MUNGE_KEY"
    (umask 0277 && dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none)
  fi
  chown root:root "$MUNGE_KEY"
  chmod 0400 "$MUNGE_KEY"
}

# Keep one previous generation of each log so that a failed start shows only
# its own messages.
rotate_logs() {
  local f
  for f in "$CTLD_LOG" "$SLURMD_LOG" "$MUNGE_LOG" "$LOG/munged.out" "$LOG/slurmctld.out" "$LOG/slurmd.out"; do
    if [[ -e $f ]]; then mv -f "$f" "$f.old"; fi
  done
}

# ---------------------------------------------------------------- start
DEADLINE=0
remaining() { echo $((DEADLINE - SECONDS)); }

# start_failed MESSAGE LOG...: stop what was started, then report (in this
# order, so that a reader that goes away cannot leave daemons behind).
start_failed() {
  local msg=$1; shift
  do_stop quiet >/dev/null 2>&1 || true
  trap - EXIT
  echo "$PROG: start failed: $msg" >&2
  tail_logs "$@"
  echo "$PROG: what was started has been stopped; logs stay in $LOG and $MUNGE_DIR" >&2
  exit 1
}

# While start runs, any unexpected exit (an error under set -e, Ctrl-C, a
# closed output pipe) stops the daemons started so far.
start_abort() {
  trap - EXIT
  do_stop quiet >/dev/null 2>&1 || true
}

# wait_for SECS CMD...: poll CMD every 0.2 s until it succeeds or SECS pass
wait_for() {
  local secs=$1; shift
  local end=$((SECONDS + secs))
  while ! "$@"; do
    [[ $SECONDS -lt $end ]] || return 1
    sleep 0.2
  done
}

munge_works() {
  [[ -S $MUNGE_SOCKET ]] && munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1
}

# wait_node_idle SECS: 0 once the node is idle; 1 on timeout or as soon as
# the controller has rejected the node (inval/drain/fail: no point waiting).
wait_node_idle() {
  local end=$((SECONDS + $1)) st
  while :; do
    st=$(node_state)
    case $st in
      idle) return 0 ;;
      inval*|drain*|drng*|fail*) return 1 ;;
    esac
    [[ $SECONDS -lt $end ]] || return 1
    sleep 0.2
  done
}

all_running() {
  [[ -n $(daemon_pid munged) && -n $(daemon_pid slurmctld) && -n $(daemon_pid slurmd) ]]
}

do_start() {
  require_root
  require_tools
  check_path_lengths

  if all_running && ctld_answers; then
    local tmp changed=""
    tmp=$(mktemp -d)
    write_configs "$tmp"
    local f
    for f in slurm.conf gres.conf plugstack.conf; do
      cmp -s "$tmp/$f" "$ETC/$f" || changed+=" $f"
    done
    rm -rf "$tmp"
    local st
    st=$(node_state)
    if [[ -n $changed ]]; then
      say "already running ($DIR, node $NODE ${st:-unknown}); generated config differs ($changed ), use 'restart' to apply"
    else
      say "already running ($DIR, node $NODE ${st:-unknown})"
    fi
    return 0
  fi
  if [[ -n $(cluster_pids munged slurmctld slurmd slurmstepd) ]]; then
    say "partly running or stale cluster found, stopping it first"
    do_stop quiet || die "could not stop the stale cluster in $DIR"
  fi

  check_port SlurmctldPort "$CTLD_PORT"
  check_port SlurmdPort "$SLURMD_PORT"
  [[ $CTLD_PORT != "$SLURMD_PORT" ]] || die "IX_SLURMCTLD_PORT and IX_SLURMD_PORT must differ"
  case $SPANK_MODE in required|optional) ;; *) die "IX_SPANK_MODE must be 'required' or 'optional' (got '$SPANK_MODE')" ;; esac

  trap start_abort EXIT
  trap 'exit 1' INT TERM HUP PIPE
  make_layout
  rotate_logs
  write_configs "$ETC"
  chmod 0644 "$ETC"/slurm.conf "$ETC"/gres.conf "$ETC"/plugstack.conf

  DEADLINE=$((SECONDS + TIMEOUT))

  # munged: daemonizes itself and writes its pid file.
  env "$MARKER" munged --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" --pid-file="$MUNGE_PID" \
    --log-file="$MUNGE_LOG" --seed-file="$MUNGE_SEED" >"$LOG/munged.out" 2>&1 \
    || start_failed "munged exited with status $?" "$LOG/munged.out" "$MUNGE_LOG"
  wait_for "$(remaining)" munge_works \
    || start_failed "munged does not answer on $MUNGE_SOCKET" "$LOG/munged.out" "$MUNGE_LOG"

  # slurmctld: daemonizes with -f (no -D) and writes SlurmctldPidFile.
  env "$MARKER" slurmctld -f "$CONF" >"$LOG/slurmctld.out" 2>&1 \
    || start_failed "slurmctld exited with status $?" "$LOG/slurmctld.out" "$CTLD_LOG"
  wait_for "$(remaining)" ctld_answers \
    || start_failed "slurmctld does not answer 'scontrol ping'" "$LOG/slurmctld.out" "$CTLD_LOG"

  # slurmd: the marker variable is inherited by every slurmstepd it forks.
  env "$MARKER" slurmd -f "$CONF" -N "$NODE" >"$LOG/slurmd.out" 2>&1 \
    || start_failed "slurmd exited with status $?" "$LOG/slurmd.out" "$SLURMD_LOG"
  if ! wait_node_idle "$(remaining)"; then
    local st reason
    st=$(node_state); reason=$(timeout 5 scontrol show node "$NODE" 2>/dev/null | grep -o 'Reason=.*' || true)
    local why="did not become idle within ${TIMEOUT}s"
    case $st in inval*|drain*|drng*|fail*) why="was rejected by slurmctld" ;; esac
    start_failed "node $NODE $why (state '${st:-unknown}'${reason:+, $reason})" \
      "$LOG/slurmd.out" "$SLURMD_LOG" "$CTLD_LOG"
  fi

  trap - EXIT INT TERM HUP PIPE
  local plug=none
  [[ -e $PLUGIN ]] && plug="$SPANK_MODE $PLUGIN"
  say "up: node $NODE idle, gpu:b300:8, ports $CTLD_PORT/$SLURMD_PORT, plugin: $plug; SLURM_CONF=$CONF"
}

# ---------------------------------------------------------------- restart-slurmd
slurmd_start_time() { timeout 5 scontrol show node "$NODE" 2>/dev/null | grep -o 'SlurmdStartTime=[^ ]*'; }

# node_registered OLD: the restarted slurmd has registered (the controller
# shows a SlurmdStartTime other than OLD) and the node is up (sinfo marks a
# node it cannot reach with '*'; down/fail/unknown are not up).
node_registered() {
  local st
  [[ $(slurmd_start_time) != "$1" ]] || return 1
  st=$(node_state)
  [[ -n $st && $st != *'*' && $st != down* && $st != fail* && $st != unk* ]]
}

# Only slurmd: the spool (step sockets) and the slurmstepd of running steps
# are kept, so that steps go on across the restart.
do_restart_slurmd() {
  require_root
  if ! all_running || ! ctld_answers; then die "the cluster in $DIR is not fully running; use start"; fi
  local pid old
  pid=$(daemon_pid slurmd)
  old=$(slurmd_start_time)
  terminate slurmd 10 "$pid" || die "slurmd (pid $pid) did not stop"
  rm -f "$SLURMD_PID"
  DEADLINE=$((SECONDS + TIMEOUT))
  env "$MARKER" slurmd -f "$CONF" -N "$NODE" >>"$LOG/slurmd.out" 2>&1 || {
    echo "$PROG: slurmd exited with status $?" >&2; tail_logs "$LOG/slurmd.out" "$SLURMD_LOG"; exit 1
  }
  if ! wait_for "$(remaining)" node_registered "$old"; then
    echo "$PROG: node $NODE did not register within ${TIMEOUT}s of slurmd's restart (state '$(node_state)')" >&2
    tail_logs "$SLURMD_LOG" "$CTLD_LOG"
    exit 1
  fi
  say "slurmd restarted (pid $(daemon_pid slurmd), was $pid); node $NODE $(node_state)"
}

# ---------------------------------------------------------------- status
do_status() {
  local n=0 up=0 name pid
  for name in munged slurmctld slurmd; do
    n=$((n + 1))
    pid=$(daemon_pid "$name")
    if [[ -n $pid ]]; then
      up=$((up + 1))
      printf '%-10s running (pid %s)\n' "$name" "$pid"
    else
      printf '%-10s stopped\n' "$name"
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
  if [[ $up -eq 0 && -z $stepds ]]; then
    return 3
  fi
  if [[ $up -eq $n ]] && ctld_answers; then
    timeout 5 sinfo -o '%10P %5a %10l %5D %8t %12G %N' || return 1
    return 0
  fi
  [[ $up -eq $n ]] && echo "slurmctld does not answer 'scontrol ping'"
  return 1
}

# ---------------------------------------------------------------- main
case $CMD in
  start) do_start ;;
  stop) require_root; do_stop ;;
  restart) require_root; do_stop quiet || die "stop failed"; do_start ;;
  restart-slurmd) do_restart_slurmd ;;
  status) do_status ;;
  env) printf 'export SLURM_CONF=%q\n' "$CONF" ;;
esac
