# shellcheck shell=bash
# Sourced by scripts/local-cluster.sh: the 'start' and 'restart-slurmd'
# commands: the daemons started in order (munged, slurmctld, with N nodes
# the bridge and the nodes' namespaces, then each slurmd), each waited for
# within the start-up timeout, and everything started stopped again when a
# start fails.

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

# wait_nodes_idle SECS: 0 once every node is idle; 1 on timeout or as soon
# as the controller has rejected a node (inval/drain/fail: no point
# waiting). NOT_IDLE is then the first node that is not idle.
NOT_IDLE=
wait_nodes_idle() {
  local end=$((SECONDS + $1)) name st idle
  local -A state
  while :; do
    state=()
    while read -r name st; do state[$name]=$st; done < <(timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null || true)
    idle=1
    for name in "${NODE_NAMES[@]}"; do
      st=${state[$name]:-}
      case $st in
        idle) ;;
        inval*|drain*|drng*|fail*) NOT_IDLE=$name; return 1 ;;
        *) idle=0; NOT_IDLE=$name ;;
      esac
    done
    [[ $idle -eq 0 ]] || return 0
    [[ $SECONDS -lt $end ]] || return 1
    sleep 0.2
  done
}

all_running() {
  [[ -n $(daemon_pid munged) && -n $(daemon_pid slurmctld) ]] || return 1
  local name
  for name in "${NODE_NAMES[@]}"; do
    [[ -n $(daemon_pid slurmd "$name") ]] || return 1
    [[ $MULTI -eq 0 || -n $(holder_pid "$name") ]] || return 1
  done
}

# node_states: "NAME STATE" of each node, for messages.
node_states() {
  local name out=()
  for name in "${NODE_NAMES[@]}"; do out+=("$name $(node_state "$name")"); done
  local IFS=,
  echo "${out[*]}"
}

# A start on a running cluster: says so, and whether the configuration it
# would generate now differs from the one the cluster runs with.
report_already_running() {
  local tmp changed="" f st
  tmp=$(mktemp -d)
  write_configs "$tmp"
  for f in slurm.conf gres.conf plugstack.conf; do
    cmp -s "$tmp/$f" "$ETC/$f" || changed+=" $f"
  done
  rm -rf "$tmp"
  local what
  if [[ $MULTI -eq 0 ]]; then
    st=$(node_state)
    what="node $NODE ${st:-unknown}"
  else
    what="$NODES nodes: $(node_states)"
  fi
  if [[ -n $changed ]]; then
    say "already running ($DIR, $what); generated config differs ($changed ), use 'restart' to apply"
  else
    say "already running ($DIR, $what)"
  fi
}

# munged, slurmctld and slurmd, each waited for until DEADLINE; a failure
# stops them all and exits (start_failed).
start_daemons() {
  # munged: daemonizes itself and writes its pid file.
  env "$MARKER" munged --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" --pid-file="$MUNGE_PID" \
    --log-file="$MUNGE_LOG" --seed-file="$MUNGE_SEED" >"$LOG/munged.out" 2>&1 \
    || start_failed "munged exited with status $?" "$LOG/munged.out" "$MUNGE_LOG"
  wait_for "$(remaining)" munge_works \
    || start_failed "munged does not answer on $MUNGE_SOCKET" "$LOG/munged.out" "$MUNGE_LOG"

  # N nodes: the bridge (it has the controller's address) and the nodes'
  # namespaces, before slurmctld so that it can reach them at once.
  [[ $MULTI -eq 0 ]] || start_network

  # slurmctld: daemonizes with -f (no -D) and writes SlurmctldPidFile.
  env "$MARKER" slurmctld -f "$CONF" >"$LOG/slurmctld.out" 2>&1 \
    || start_failed "slurmctld exited with status $?" "$LOG/slurmctld.out" "$CTLD_LOG"
  wait_for "$(remaining)" ctld_answers \
    || start_failed "slurmctld does not answer 'scontrol ping'" "$LOG/slurmctld.out" "$CTLD_LOG"

  # slurmd: the marker variable is inherited by every slurmstepd it forks.
  local name what=slurmd
  for name in "${NODE_NAMES[@]}"; do
    [[ $MULTI -eq 0 ]] || what="slurmd of $name"
    start_slurmd "$name" >"$(slurmd_out "$name")" 2>&1 \
      || start_failed "$what exited with status $?" "$(slurmd_out "$name")" "$(slurmd_log "$name")"
  done
  if ! wait_nodes_idle "$(remaining)"; then
    local st reason
    name=$NOT_IDLE
    st=$(node_state "$name"); reason=$(timeout 5 scontrol show node "$name" 2>/dev/null | grep -o 'Reason=.*' || true)
    local why="did not become idle within ${TIMEOUT}s"
    case $st in inval*|drain*|drng*|fail*) why="was rejected by slurmctld" ;; esac
    start_failed "node $name $why (state '${st:-unknown}'${reason:+, $reason})" \
      "$(slurmd_out "$name")" "$(slurmd_log "$name")" "$CTLD_LOG"
  fi
}

# start_slurmd NAME: the node's slurmd (on the host, or in the node's
# namespaces); it daemonizes, so this returns once it runs.
start_slurmd() {
  if [[ $MULTI -eq 0 ]]; then
    env "$MARKER" slurmd -f "$CONF" -N "$1"
  else
    node_exec "$1" env "$MARKER" slurmd -f "$CONF" -N "$1"
  fi
}

# stale: something of a cluster in DIR is left (a daemon, a step daemon, a
# node's namespaces, its bridge).
stale() {
  [[ -n $(cluster_pids munged slurmctld slurmd slurmstepd) || -n $(holder_pids) ]] && return 0
  [[ -n ${BRIDGE:-} ]] && ip link show "$BRIDGE" >/dev/null 2>&1
}

# do_start [N]: the kind set is the running (last started) one; N (empty:
# 1) is the node count to start when the cluster does not fully run.
do_start() {
  local want=$1
  require_root
  require_tools

  if all_running && ctld_answers; then
    if [[ -n $want && $want -ne $NODES ]]; then
      say "already running with $NODES node(s) ($DIR); use 'restart --nodes $want' to change that"
    else
      report_already_running
    fi
    return 0
  fi
  if stale; then
    say "partly running or stale cluster found, stopping it first"
    do_stop quiet || die "could not stop the stale cluster in $DIR"
  fi

  # From here on the kind started.
  local net=${IX_NODE_NET:-${NET:-$DEFAULT_NET}}
  [[ ${want:-1} -eq 1 ]] || check_net_arg "$net"
  set_kind "${want:-1}" "$net"
  check_path_lengths
  check_port SlurmctldPort "$CTLD_PORT"
  if [[ $MULTI -eq 0 ]]; then
    check_port SlurmdPort "$SLURMD_PORT"
  else
    # Each slurmd listens in its own network namespace; the host's
    # SlurmdPort does not matter.
    require_ns_tools
    check_net
    check_mpi_ports
  fi
  [[ $CTLD_PORT != "$SLURMD_PORT" ]] || die "IX_SLURMCTLD_PORT and IX_SLURMD_PORT must differ"
  case $SPANK_MODE in required|optional) ;; *) die "IX_SPANK_MODE must be 'required' or 'optional' (got '$SPANK_MODE')" ;; esac

  trap start_abort EXIT
  trap 'exit 1' INT TERM HUP PIPE
  make_layout
  write_kind
  rotate_logs
  write_configs "$ETC"
  chmod 0644 "$ETC"/slurm.conf "$ETC"/gres.conf "$ETC"/plugstack.conf

  DEADLINE=$((SECONDS + TIMEOUT))
  start_daemons

  trap - EXIT INT TERM HUP PIPE
  local plug=none
  [[ -e $PLUGIN ]] && plug="$SPANK_MODE $PLUGIN"
  if [[ $MULTI -eq 0 ]]; then
    say "up: node $NODE idle, gpu:b300:8, ports $CTLD_PORT/$SLURMD_PORT, plugin: $plug; SLURM_CONF=$CONF"
  else
    say "up: $NODES nodes ${NODE_NAMES[0]}..${NODE_NAMES[-1]} idle ($(node_addr "${NODE_NAMES[0]}")..$(node_addr "${NODE_NAMES[-1]}") on $BRIDGE, controller $CTLD_ADDR:$CTLD_PORT), gpu:b300:8 each, MpiParams=ports=$MPI_PORTS, plugin: $plug; SLURM_CONF=$CONF"
  fi
}

# ---------------------------------------------------------------- restart-slurmd
slurmd_start_time() { timeout 5 scontrol show node "$1" 2>/dev/null | grep -o 'SlurmdStartTime=[^ ]*'; }

# node_registered NAME OLD: the restarted slurmd has registered (the
# controller shows a SlurmdStartTime other than OLD) and the node is up
# (sinfo marks a node it cannot reach with '*'; down/fail/unknown are not up).
node_registered() {
  local st
  [[ $(slurmd_start_time "$1") != "$2" ]] || return 1
  st=$(node_state "$1")
  [[ -n $st && $st != *'*' && $st != down* && $st != fail* && $st != unk* ]]
}

# Only slurmd: the spool (step sockets), the slurmstepd of running steps and
# a node's namespaces are kept, so that steps go on across the restart.
do_restart_slurmd() {
  require_root
  if ! all_running || ! ctld_answers; then die "the cluster in $DIR is not fully running; use start"; fi
  local name
  for name in "${NODE_NAMES[@]}"; do restart_slurmd "$name"; done
}

# restart_slurmd NAME: one node's slurmd, waited for until it registered.
restart_slurmd() {
  local name=$1 pid old
  pid=$(daemon_pid slurmd "$name")
  old=$(slurmd_start_time "$name")
  terminate slurmd 10 "$pid" || die "slurmd (pid $pid) did not stop"
  rm -f "$(slurmd_pid_file "$name")"
  DEADLINE=$((SECONDS + TIMEOUT))
  start_slurmd "$name" >>"$(slurmd_out "$name")" 2>&1 || {
    echo "$PROG: slurmd exited with status $?" >&2; tail_logs "$(slurmd_out "$name")" "$(slurmd_log "$name")"; exit 1
  }
  if ! wait_for "$(remaining)" node_registered "$name" "$old"; then
    echo "$PROG: node $name did not register within ${TIMEOUT}s of slurmd's restart (state '$(node_state "$name")')" >&2
    tail_logs "$(slurmd_log "$name")" "$CTLD_LOG"
    exit 1
  fi
  say "slurmd restarted (pid $(daemon_pid slurmd "$name"), was $pid); node $name $(node_state "$name")"
}
