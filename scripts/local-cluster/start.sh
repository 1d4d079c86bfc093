# shellcheck shell=bash
# Sourced by scripts/local-cluster.sh: the 'start' and 'restart-slurmd'
# commands: the daemons started in order (munged, slurmctld, slurmd), each
# waited for within the start-up timeout, and everything started stopped
# again when a start fails.

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
  st=$(node_state)
  if [[ -n $changed ]]; then
    say "already running ($DIR, node $NODE ${st:-unknown}); generated config differs ($changed ), use 'restart' to apply"
  else
    say "already running ($DIR, node $NODE ${st:-unknown})"
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
}

do_start() {
  require_root
  require_tools
  check_path_lengths

  if all_running && ctld_answers; then
    report_already_running
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
  start_daemons

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
