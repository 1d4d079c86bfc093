# shellcheck shell=bash
# Sourced by scripts/local-cluster.sh: the 'stop' command. Jobs are cancelled
# while the controller answers, then slurmd, slurmctld, leftover step daemons
# (and their tasks) and munged are terminated, then (N nodes) whatever is
# left in the nodes' namespaces, and the bridge; it fails if any is left.

# cancel_jobs SLURMD_PID: scancel every job, then wait up to 10 s for the
# step daemons to go (not at all when slurmd is gone).
cancel_jobs() {
  local slurmd=$1 jobs p
  jobs=$(timeout 5 squeue -h -o %A 2>/dev/null | sort -u || true)
  [[ -n $jobs ]] || return 0
  # shellcheck disable=SC2086  # job ids are digits
  timeout 10 scancel $jobs 2>/dev/null || true
  for ((p = 0; p < 100; p++)); do
    [[ -z $slurmd || -z $(cluster_pids slurmstepd) ]] && break
    sleep 0.1
  done
}

# Step daemons that outlived slurmd (e.g. after slurmd was killed) ignore
# SIGTERM: end their tasks first, then the step daemons themselves.
stop_stepds() {
  local pids tasks
  mapfile -t pids < <(cluster_pids slurmstepd)
  [[ ${#pids[@]} -gt 0 ]] || return 0
  mapfile -t tasks < <(descendants "${pids[@]}")
  [[ ${#tasks[@]} -eq 0 ]] || terminate "" 3 "${tasks[@]}" || true
  terminate "" 2 "${pids[@]}" || true
}

# Fails, listing them, when processes of the cluster are still running.
check_none_left() {
  local left
  left=$( (cluster_pids munged slurmctld slurmd slurmstepd; holder_pids) | sort -u | tr '\n' ' ')
  [[ -n ${left// /} ]] || return 0
  echo "$PROG: processes of the cluster in $DIR are still running:" >&2
  # shellcheck disable=SC2086
  ps -o pid,ppid,args -p ${left// /,} >&2 || true
  return 1
}

# do_stop [quiet]: 'quiet' leaves out the closing "stopped"/"not running" line.
do_stop() {
  local quiet=${1:-}
  local any=0
  local munged ctld slurmd stepds holders
  munged=$(daemon_pid munged); ctld=$(daemon_pid slurmctld); slurmd=$(cluster_pids slurmd)
  stepds=$(cluster_pids slurmstepd)
  holders=$(holder_pids)
  [[ -n $munged$ctld$slurmd$stepds$holders ]] && any=1

  # Cancel jobs while the controller still answers so steps end cleanly.
  # (Also when slurmd is gone: the controller then still tells waiting srun
  # and sbatch --wait clients that their jobs ended.)
  if [[ -n $ctld ]] && ctld_answers; then cancel_jobs "$slurmd"; fi

  local pids name
  mapfile -t pids < <(for name in "${NODE_NAMES[@]}"; do daemon_pid slurmd "$name"; done; cluster_pids slurmd)
  terminate slurmd 10 "${pids[@]}" || true
  mapfile -t pids < <(echo "$ctld"; cluster_pids slurmctld)
  terminate slurmctld 10 "${pids[@]}" || true
  stop_stepds
  mapfile -t pids < <(echo "$munged"; cluster_pids munged)
  terminate munged 10 "${pids[@]}" || true
  # N nodes: what is left in their namespaces (tasks a job left behind, a
  # shell entered with exec), the holders, then the network.
  stop_nodes

  rm -f "$CTLD_PID" "$RUN"/slurmd.pid "$RUN"/slurmd-*.pid "$MUNGE_PID"
  check_none_left || return 1
  check_network_gone || return 1
  if [[ $quiet != quiet ]]; then
    if [[ $any -eq 1 ]]; then say "stopped ($DIR)"; else say "not running ($DIR)"; fi
  fi
  return 0
}
