# shellcheck shell=bash
# Sourced by scripts/local-cluster.sh: finding this cluster's processes (by
# executable name, and DIR in the command line or MARKER in the
# environment) and stopping them. Uses DIR, MARKER, PROG and the pid file
# paths of the main script.

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

# daemon_pid NAME [NODE]: pid of this cluster's main NAME daemon (slurmd:
# NODE's, default the first node's), from its pid file when that is valid,
# else the NAME process whose command line names DIR (and "-N NODE").
# Prints nothing when it does not run.
daemon_pid() {
  local name=$1 node=${2:-${NODE_NAMES[0]}} file pid want="$DIR/"
  case $name in
    munged) file=$MUNGE_PID ;;
    slurmctld) file=$CTLD_PID ;;
    slurmd) file=$(slurmd_pid_file "$node"); want="-N $node " ;;
  esac
  if [[ -r $file ]]; then
    pid=$(tr -dc 0-9 2>/dev/null <"$file") || pid=
    if [[ -n $pid && $(exe_base "$pid") == "$name" ]] && cmdline_has "$pid" "$DIR/" && cmdline_has "$pid" "$want"; then
      echo "$pid"; return 0
    fi
  fi
  for pid in $(cluster_pids "$name"); do
    if cmdline_has "$pid" "$DIR/" && cmdline_has "$pid" "$want"; then echo "$pid"; return 0; fi
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

# still_alive TRIES PID...: polls every 0.1 s, up to TRIES times, until none
# of the PIDs is alive; prints those still alive then (none: all exited).
still_alive() {
  local tries=$1 i p left; shift
  local pids=("$@")
  for ((i = 0; i < tries; i++)); do
    left=()
    for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
    [[ ${#left[@]} -eq 0 ]] && return 0
    pids=("${left[@]}")
    sleep 0.1
  done
  printf '%s\n' "${pids[@]}"
}

# terminate WHAT GRACE PID...: SIGTERM, wait up to GRACE seconds, then SIGKILL
# (with a note on stderr unless WHAT is empty); wait for the exit.
terminate() {
  local what=$1 grace=$2; shift 2
  local pids=() p
  for p in "$@"; do [[ -n $p ]] && alive "$p" && pids+=("$p"); done
  [[ ${#pids[@]} -gt 0 ]] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  mapfile -t pids < <(still_alive $((grace * 10)) "${pids[@]}")
  [[ ${#pids[@]} -gt 0 ]] || return 0
  [[ -z $what ]] || echo "$PROG: $what did not exit within $grace s of SIGTERM; sending SIGKILL to ${pids[*]}" >&2
  kill -KILL "${pids[@]}" 2>/dev/null || true
  mapfile -t pids < <(still_alive 50 "${pids[@]}")
  [[ ${#pids[@]} -gt 0 ]] || return 0
  echo "$PROG: ${what:-process} still alive after SIGKILL: ${pids[*]}" >&2
  return 1
}
