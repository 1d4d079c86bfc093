# shellcheck shell=bash
# Sourced by scripts/local-cluster.sh: the cluster directory's layout at a
# start: directories, fresh spool, the fake GPU device nodes, the munge key,
# and one previous generation of each log. Uses the main script's paths.

# DEV/nvidia0..7: character devices with the NVIDIA major (195), remade only
# when missing or wrong.
make_gpu_devices() {
  local i dev
  for i in 0 1 2 3 4 5 6 7; do
    dev=$DEV/nvidia$i
    if [[ ! -c $dev || $(stat -c '%t:%T' "$dev") != "c3:$(printf %x "$i")" ]]; then
      rm -f "$dev"
      mknod -m 0666 "$dev" c 195 "$i" || die "mknod $dev c 195 $i failed"
    fi
  done
}

# A random key of 1 KiB, root's and 0400, kept across starts.
make_munge_key() {
  if [[ ! -s $MUNGE_KEY || $(stat -c %s "$MUNGE_KEY") -lt 32 ]]; then
    rm -f "$MUNGE_KEY"
    (umask 0277 && dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none)
  fi
  chown root:root "$MUNGE_KEY"
  chmod 0400 "$MUNGE_KEY"
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
  local name
  if [[ $MULTI -eq 1 ]]; then
    for name in "${NODE_NAMES[@]}"; do mkdir -m 0755 "$SPOOL/slurmd/$name"; done
  fi
  rm -f "$CTLD_PID" "$RUN"/slurmd.pid "$RUN"/slurmd-*.pid "$RUN"/node-*.pid "$MUNGE_PID" "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  make_gpu_devices
  make_munge_key
}

# Keep one previous generation of each log so that a failed start shows only
# its own messages.
rotate_logs() {
  local f name files=("$CTLD_LOG" "$MUNGE_LOG" "$LOG/munged.out" "$LOG/slurmctld.out")
  for name in "${NODE_NAMES[@]}"; do
    files+=("$(slurmd_log "$name")" "$(slurmd_out "$name")")
    [[ $MULTI -eq 0 ]] || files+=("$LOG/node-$name.out")
  done
  for f in "${files[@]}"; do
    if [[ -e $f ]]; then mv -f "$f" "$f.old"; fi
  done
}
