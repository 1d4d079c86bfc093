#!/usr/bin/env bash
# Fault matrix, part B: file-system and user faults, on the local cluster with
# the fake engine, router and client.
#
# 1. The result directory is full (a 64 KiB tmpfs): full before the step, no
#    inode left for server.log, filled by the client before the engine fails.
# 2. The recipe directory cannot be read: missing, a file, 0700 for an srun
#    of an unprivileged user, the recipe a FIFO, a directory, a link to
#    /dev/zero, mode 0000; then a recipe srun could read but slurmstepd
#    cannot (srun with its own plugstack.conf). The cluster is restarted with
#    a recipe_dir of this script's and restored at the end.
# 3. The broker's lock: an unprivileged user cannot open the lock or the
#    table (the lease directory is 0700 root) and blocks no step; root
#    holding the lock past the broker's 10 s deadline fails the step naming
#    the lock and its holder.
# 4. An unprivileged job user (nobody) plants FIFOs and symlinks (to
#    /dev/zero and to a root-only file) in place of every file of the run
#    directory and the result directory while the step runs, and before the
#    step where it can: the result directory a link to a root-owned
#    directory, inferencex-JOB.STEP a link, the servers' logs FIFOs or links.
#
# After every case: srun returned (a 60 s bound tells a hang), no server,
# ix-stepd or client process, port or lease left, no job left (squeue), no
# step directory left in run_dir (unless the backstop kept it, as its record),
# and the next step on the node works. Case 4 also checks that root never
# followed a link: the root-only file is unchanged and nowhere copied, no
# root-owned file appears where the user writes or in the root-owned targets.
#
# Needs root, the user nobody (group nogroup), and what the CTest fixture
# exports (IX_CLUSTER_DIR, SLURM_CONF, IX_SPANK_PLUGIN, IX_SPANK_ARGS,
# IX_RECIPE_DIR, IX_FAKES_BIN_DIR, IXCTL, IX_SOURCE_DIR). Exit 0 when every
# check passed. Client scripts are single-quoted on purpose (they expand in
# the step); "check || fail" reports.
# shellcheck disable=SC2016,SC2317
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
ix_require_env IX_CLUSTER_DIR SLURM_CONF IX_SPANK_PLUGIN IX_FAKES_BIN_DIR IXCTL IX_SOURCE_DIR
RECIPE=dsv41flash-fp4-b300-vllm
CLUSTER=$IX_SOURCE_DIR/scripts/local-cluster.sh
ORIG_RECIPE_DIR=${IX_RECIPE_DIR:-$IX_SOURCE_DIR/recipes}
SLURMD_LOG=$IX_CLUSTER_DIR/log/slurmd.log
T0=$SECONDS

tmp=$(mktemp -d /tmp/ix-fault-files.XXXXXX)
chmod 0755 "$tmp"
mkdir -m 0777 "$tmp/rec"        # the fake engine's argv records, out of the result directories
mkdir "$tmp/u" "$tmp/next"       # u: the job user's working directory
chown nobody:nogroup "$tmp/u"
export FAKE_VLLM_RECORD_DIR=$tmp/rec
restarted=0 mounts=() holder=
cleanup() {
  if [[ -n $holder ]]; then kill "$holder" 2>/dev/null || true; fi
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done
  if [[ $restarted -eq 1 ]]; then
    IX_RECIPE_DIR=$ORIG_RECIPE_DIR "$CLUSTER" restart >"$tmp/restore.log" 2>&1 ||
      { echo "FAIL: could not restore the cluster:"; cat "$tmp/restore.log"; }
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
err_of() { head -c 700 "$tmp/$1.err" | tr '\n' '|'; }

# run_step NAME WHO ARM CLIENT [ENV...]: one srun, by root or the job user
# (WHO: root|user), in the user's working directory, of `bash -c CLIENT`;
# bounded at 60 s (RC 124: it hung). Sets RC and MS; stdout/stderr in
# $tmp/NAME.out/.err.
run_step() {
  local name=$1 who=$2 arm=$3 client=$4; shift 4
  local runner=() start
  if [[ $who == user ]]; then runner=(setpriv --reuid=nobody --regid=nogroup --clear-groups); fi
  start=$(now_ms)
  RC=0
  (cd "$tmp/u" && env "$@" timeout 60 "${runner[@]}" srun --gres=gpu:4 --inferencex-recipe=$RECIPE \
    --inferencex-arm="$arm" --inferencex-conc=8 bash -c "$client" >"$tmp/$name.out" 2>"$tmp/$name.err") || RC=$?
  MS=$(($(now_ms) - start))
}

# expect_failure NAME LIMIT_MS TEXT: the step failed, within LIMIT_MS, and
# srun's stderr has TEXT (a fixed string).
expect_failure() {
  local name=$1 limit=$2 text=$3
  if [[ $RC -eq 124 ]]; then
    fail "$name: srun hung (killed after 60 s): $(err_of "$name")"
  elif [[ $RC -eq 0 ]]; then
    fail "$name: srun exit 0; a failure was expected: $(err_of "$name")"
  elif [[ $MS -ge $limit ]]; then
    fail "$name: srun took $MS ms (limit $limit)"
  elif ! grep -qF -- "$text" "$tmp/$name.err"; then
    fail "$name: srun's stderr does not say '$text': $(err_of "$name")"
  else
    ok "$name: srun exit $RC after $MS ms: $(grep -F -m1 -- "$text" "$tmp/$name.err" | cut -c1-260)"
  fi
}

# no_jobs NAME: squeue empty within 5 s (nothing pending, running or
# completing); what is left is reported and cancelled.
no_jobs() {
  local i q
  for ((i = 0; i < 50; i++)); do
    q=$(squeue -h -o '%i %t' 2>&1) || true
    if [[ -z $q ]]; then return 0; fi
    sleep 0.1
  done
  fail "$1: jobs left after 5 s: $(tr '\n' ' ' <<<"$q")"
  # shellcheck disable=SC2046  # job ids
  scancel $(awk '{print $1}' <<<"$q") 2>/dev/null || true
}

# The run directory's entries before the script: what appears later and
# stays is a step's directory that was not removed.
run_dir_list() { find "$RUN_DIR" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort || true; }
RUN_BEFORE=$(run_dir_list)
run_dir_clean() {
  local e
  for e in $(comm -13 <(echo "$RUN_BEFORE") <(run_dir_list)); do
    # slurmstepd removes it in its exit hook, which can still run when the
    # job has left the queue (seen once in CI: found, then empty): 5 s.
    for _ in $(seq 50); do [[ -d $RUN_DIR/$e ]] || break; sleep 0.1; done
    [[ -d $RUN_DIR/$e ]] || continue  # removed, or the topology cache
    if grep -q "step $e: backstop:" "$SLURMD_LOG" 2>/dev/null; then
      echo "     $1: $RUN_DIR/$e kept by the backstop (its record): $(grep -m1 "step $e: backstop:" "$SLURMD_LOG" | cut -c1-200)"
    else
      fail "$1: step directory left in $RUN_DIR: $e ($(find "$RUN_DIR/$e" -mindepth 1 -printf '%f ' 2>/dev/null))"
    fi
    rm -rf "${RUN_DIR:?}/$e"
  done
}

# next_step NAME: after a case, a plain step on the node works. Sets
# LAST_JOB to its job id.
LAST_JOB=0
next_step() {
  local res=$tmp/next/$1
  mkdir -p "$res"
  run_step "next-$1" root tp4 'ix-fake-client --sessions 2 --turns 1 --out "$IX_RESULT_DIR/result.json" && echo "$SLURM_JOB_ID" >"$IX_RESULT_DIR/job"' \
    IX_RESULT_DIR="$res"
  if [[ $RC -ne 0 || ! -s $res/job ]]; then
    fail "$1: the next step failed (exit $RC after $MS ms): $(err_of "next-$1")"
  else
    LAST_JOB=$(cat "$res/job")
  fi
}

# after NAME: everything a case must leave as it found it.
after() {
  check_clean "$1"
  no_jobs "$1"
  run_dir_clean "$1"
  next_step "$1"
  check_clean "$1 (next step)"
  no_jobs "$1 (next step)"
}

next_step start
[[ $LAST_JOB -gt 0 ]] || { echo "FAIL: a plain step does not work on this cluster"; exit 1; }

# ---------------------------------------------------------------- 1. a full result directory
mount_tmpfs() {  # mount_tmpfs DIR OPTIONS
  mkdir -p "$1" && mount -t tmpfs -o "$2" tmpfs "$1" && mounts+=("$1")
}
fill() { dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null || true; }  # until ENOSPC
CLIENT='ix-fake-client --sessions 2 --turns 1 --out "$IX_RESULT_DIR/result.json"'

full=$tmp/full
if ! mount_tmpfs "$full" size=64k,mode=0755; then
  fail "full: cannot mount a tmpfs on $full"
else
  fill "$full"
  run_step full-before root dep4 "$CLIENT" IX_RESULT_DIR="$full"
  expect_failure full-before 10000 "No space left on device"
  after full-before

  rm -f "$full"/*
  # Filled by the client once the servers answer; then the engine fails:
  # failure.json cannot be written there, the step must still end at once.
  run_step full-during root dep4 'dd if=/dev/zero of="$IX_RESULT_DIR/fill" bs=4k 2>/dev/null; sleep 30' \
    IX_RESULT_DIR="$full" FAKE_VLLM_CRASH_ENGINE_AFTER_S=1.5
  if [[ $RC -eq 124 || $RC -eq 0 || $MS -ge 8000 ]]; then
    fail "full-during: srun exit $RC after $MS ms (want a failure within 8 s): $(err_of full-during)"
  else
    ok "full-during: srun exit $RC after $MS ms; $(df --output=avail "$full" | tail -1 | tr -d ' ') KiB left"
    # failure.json may not fit; the reason then is in slurmd's log.
    step_id=$(grep -o 'StepId=[0-9.]*' "$tmp/full-during.err" 2>/dev/null | head -1 | cut -d= -f2)
    if [[ -e $full/failure.json ]]; then :
    elif [[ -n $step_id ]] && grep -q "inferencex: step $step_id failed: engine" "$SLURMD_LOG"; then
      ok "full-during: no room for failure.json; slurmd's log has the reason"
    else
      fail "full-during: neither failure.json nor slurmd's log says why step ${step_id:-?} failed: $(err_of full-during)"
    fi
  fi
  after full-during
fi

# No inode left: server.log cannot even be created.
noinode=$tmp/noinode
if mount_tmpfs "$noinode" size=1m,nr_inodes=8,mode=0755; then
  for i in $(seq 20); do { : >"$noinode/f$i"; } 2>/dev/null || break; done
  run_step no-inode root tp4 "$CLIENT" IX_RESULT_DIR="$noinode"
  expect_failure no-inode 10000 "cannot open log 'server.log': No space left on device"
  after no-inode
else
  fail "no-inode: cannot mount a tmpfs on $noinode"
fi
for m in "${mounts[@]}"; do umount "$m" || fail "cannot unmount $m"; done
mounts=()
echo "1. full result directory: $((SECONDS - T0)) s"

# ---------------------------------------------------------------- 2. an unreadable recipe directory
RDIR=$tmp/recipes
RFILE=$RDIR/$RECIPE.yaml
mkdir "$RDIR" && cp "$ORIG_RECIPE_DIR"/*.yaml "$RDIR"/
chmod 0755 "$RDIR"
restarted=1
if ! IX_RECIPE_DIR=$RDIR "$CLUSTER" restart >"$tmp/restart.log" 2>&1; then
  echo "FAIL: cluster restart with recipe_dir=$RDIR failed:"; cat "$tmp/restart.log"; exit 1
fi
next_step restarted

# refused NAME WHO TEXT BREAK REPAIR: BREAK the recipe directory, srun must
# refuse before any job exists (the next step's job id is the one after the
# last), saying TEXT; then REPAIR it.
refused() {
  local name=$1 who=$2 text=$3 before=$LAST_JOB
  eval "$4"
  run_step "$name" "$who" tp4 true
  expect_failure "$name" 5000 "$text"
  eval "$5"
  after "$name"
  [[ $LAST_JOB -eq $((before + 1)) ]] ||
    fail "$name: a job was allocated for the refused srun (job ids $before -> $LAST_JOB)"
}
refused recipe-dir-missing root "recipe_dir $RDIR cannot be read: No such file or directory" \
  "mv $RDIR $RDIR.away" "mv $RDIR.away $RDIR"
refused recipe-dir-a-file root "recipe_dir $RDIR cannot be read: Not a directory" \
  "mv $RDIR $RDIR.away; echo x >$RDIR" "rm $RDIR; mv $RDIR.away $RDIR"
refused recipe-dir-0700 user "recipe_dir $RDIR cannot be read: Permission denied" "chmod 0700 $RDIR" "chmod 0755 $RDIR"
refused recipe-fifo root "$RFILE: a FIFO, not a regular file" \
  "mv $RFILE $RFILE.away; mkfifo $RFILE" "rm $RFILE; mv $RFILE.away $RFILE"
refused recipe-a-dir root "$RFILE: a directory, not a regular file" \
  "mv $RFILE $RFILE.away; mkdir $RFILE" "rmdir $RFILE; mv $RFILE.away $RFILE"
refused recipe-link-dev-zero root "$RFILE: a character device, not a regular file" \
  "mv $RFILE $RFILE.away; ln -s /dev/zero $RFILE" "rm $RFILE; mv $RFILE.away $RFILE"
refused recipe-0000 user "$RFILE: cannot open: Permission denied" "chmod 0000 $RFILE" "chmod 0644 $RFILE"

# srun reads a good recipe directory (its own plugstack.conf), slurmstepd
# the cluster's, where the recipe is a FIFO: the step is refused in
# slurmstepd, with the reason on srun's stderr, and nothing starts.
mkdir "$tmp/conf"
sed "s#^PlugStackConfig=.*#PlugStackConfig=$tmp/conf/plugstack.conf#" "$IX_CLUSTER_DIR/etc/slurm.conf" >"$tmp/conf/slurm.conf"
sed "s#recipe_dir=[^ ]*#recipe_dir=$ORIG_RECIPE_DIR#" "$IX_CLUSTER_DIR/etc/plugstack.conf" >"$tmp/conf/plugstack.conf"
mv "$RFILE" "$RFILE.away"; mkfifo "$RFILE"
run_step recipe-fifo-stepd root tp4 'echo started >"$IX_RESULT_DIR/started"' \
  SLURM_CONF="$tmp/conf/slurm.conf" IX_RESULT_DIR="$tmp/next"
expect_failure recipe-fifo-stepd 10000 "refused before anything started: --inferencex-recipe=$RECIPE: $RFILE: a FIFO"
[[ ! -e $tmp/next/started ]] || fail "recipe-fifo-stepd: the client ran"
rm "$RFILE"; mv "$RFILE.away" "$RFILE"
after recipe-fifo-stepd

if IX_RECIPE_DIR=$ORIG_RECIPE_DIR "$CLUSTER" restart >"$tmp/restart.log" 2>&1; then
  restarted=0
else
  echo "FAIL: could not restore the cluster:"; cat "$tmp/restart.log"; exit 1
fi
echo "2. unreadable recipe directory: $((SECONDS - T0)) s"

# ---------------------------------------------------------------- 3. the broker's lock
next_step restored
mode=$(stat -c %a "$LEASE_DIR")
[[ $mode == 700 ]] || fail "lock: $LEASE_DIR has mode $mode, not 700"
for f in lock leases; do
  if as_user flock -s -w 1 "$LEASE_DIR/$f" true 2>"$tmp/user-flock.err"; then
    fail "lock: the user took a shared lock on $LEASE_DIR/$f"
  elif ! grep -q "Permission denied" "$tmp/user-flock.err"; then
    fail "lock: the user's flock on $LEASE_DIR/$f failed, but not for want of permission: $(cat "$tmp/user-flock.err")"
  fi
done
ok "lock: the user cannot open $LEASE_DIR/lock or leases: $(head -1 "$tmp/user-flock.err")"
# The user keeps trying while a step starts: the step is not held up.
(for ((i = 0; i < 100; i++)); do as_user flock -s -n "$LEASE_DIR/lock" sleep 0.05 2>/dev/null || sleep 0.02; done) &
tryer=$!
run_step lock-user-tries root tp4 "$CLIENT" IX_RESULT_DIR="$tmp/next/lock-user-tries"
kill "$tryer" 2>/dev/null || true
wait "$tryer" 2>/dev/null || true
if [[ $RC -ne 0 || $MS -ge 5000 ]]; then fail "lock-user-tries: srun exit $RC after $MS ms: $(err_of lock-user-tries)"; else
  ok "lock-user-tries: a step started while the user tried the lock: exit 0 after $MS ms"; fi
after lock-user-tries

# Root (an admin's tool, a stuck process) holds the lock past the deadline.
flock "$LEASE_DIR/lock" sleep 11 &
holder=$!
sleep 0.3
run_step lock-held root tp4 "$CLIENT" IX_RESULT_DIR="$tmp/next/lock-held"
expect_failure lock-held 16000 "cannot lock $LEASE_DIR/lock within 10000 ms: held by pid $holder (flock)"
[[ $MS -ge 9500 ]] || fail "lock-held: srun failed after $MS ms, before the broker's 10 s deadline"
wait "$holder" || fail "lock-held: the lock holder (flock sleep 11) failed"
holder=
after lock-held
echo "3. the broker's lock: $((SECONDS - T0)) s"

# ---------------------------------------------------------------- 4. FIFOs and links planted by the job user
# A root-only file (as /etc/shadow is) and a root-owned directory: root must
# never write, read out or create anything through a link to them.
mkdir -m 0700 "$tmp/rootonly"
secret="ix-fault-files secret $$ $RANDOM"
echo "$secret" >"$tmp/rootonly/secret"; chmod 0600 "$tmp/rootonly/secret"
mkdir -m 0755 "$tmp/rootdir"
echo keep >"$tmp/rootdir/keep"
shadow_sum=$(sha256sum /etc/shadow)
root_state() { stat -c '%n %s %Y %u %a' /etc/shadow "$tmp/rootonly" "$tmp/rootonly"/* "$tmp/rootdir" "$tmp/rootdir"/*; sha256sum "$tmp/rootonly/secret" "$tmp/rootdir/keep"; }
ROOT_STATE=$(root_state)
touch "$tmp/marker"

# never_followed NAME: the targets are unchanged, the secret is nowhere the
# user can read, and root created nothing where the user writes.
never_followed() {
  [[ $(sha256sum /etc/shadow) == "$shadow_sum" ]] || fail "$1: /etc/shadow changed"
  [[ $(root_state) == "$ROOT_STATE" ]] || fail "$1: a root-owned target changed: $(diff <(echo "$ROOT_STATE") <(root_state) | tr '\n' ' ')"
  local found
  found=$(grep -rlsF -- "$secret" "$tmp/u" "$RUN_DIR" 2>/dev/null) || true
  [[ -z $found ]] || fail "$1: the root-only file was copied to: $found"
  found=$(find "$tmp/u" "$tmp/rootdir" -user root ! -path "$tmp/u" ! -path "$tmp/rootdir" ! -path "$tmp/rootdir/keep" 2>/dev/null) || true
  [[ -z $found ]] || fail "$1: root-owned files appeared: $found"
}

# plant.sh KIND END LIST, the client: replaces every file of IX_RUN_DIR and
# IX_RESULT_DIR with KIND (fifo, zero: a link to /dev/zero, secret: a link to
# the root-only file), writes their names to LIST, then exits 0 (END=exit) or
# waits for the engine's failure (END=crash) in a child, as a wrapper script
# runs its client: the failure must end that child too.
cat >"$tmp/plant.sh" <<EOF
kind=\$1 end=\$2 list=\$3
for f in "\$IX_RUN_DIR"/* "\$IX_RESULT_DIR"/*; do
  rm -f "\$f" || continue
  case \$kind in
    fifo) mkfifo "\$f" ;;
    zero) ln -s /dev/zero "\$f" ;;
    secret) ln -s "$tmp/rootonly/secret" "\$f" ;;
  esac && echo "\${f##*/}" >>"\$list"
done
if [[ \$end == exit ]]; then exit 0; fi
sleep 30
EOF
chmod 0755 "$tmp/plant.sh"

# 4a. While the step runs.
for point in "fifo exit" "zero exit" "secret exit" "fifo crash" "secret crash"; do
  read -r kind end <<<"$point"
  name=during-$kind-$end list=$tmp/u/planted-$kind-$end
  env=(IX_RESULT_DIR="$tmp/u/$name")
  if [[ $end == crash ]]; then env+=(FAKE_VLLM_CRASH_ENGINE_AFTER_S=1.5); fi
  run_step "$name" user dep4 "bash $tmp/plant.sh $kind $end $list" "${env[@]}"
  planted=$(sort "$list" 2>/dev/null | tr '\n' ' ') || true
  for f in stepd.pid state plan.json placement.json stepd.log server.log router.log; do
    [[ " $planted" == *" $f "* ]] || fail "$name: the client did not replace $f (replaced: $planted)"
  done
  if [[ $end == exit ]]; then
    if [[ $RC -ne 0 || $MS -ge 10000 ]]; then fail "$name: srun exit $RC after $MS ms: $(err_of "$name")"; else
      ok "$name: srun exit 0 after $MS ms; replaced: $planted"; fi
  else
    if [[ $RC -eq 0 || $RC -eq 124 || $MS -ge 8000 ]]; then
      fail "$name: srun exit $RC after $MS ms (want a failure within 8 s): $(err_of "$name")"
    elif [[ ! -f $tmp/u/$name/failure.json || -L $tmp/u/$name/failure.json ]] || ! grep -q EngineCore "$tmp/u/$name/failure.json"; then
      fail "$name: no failure.json (a regular file naming the EngineCore) in the result directory"
    else
      ok "$name: srun exit $RC after $MS ms, failure.json written; replaced: $planted"
    fi
  fi
  after "$name"
  never_followed "$name"
done

# 4b. Before the step, where the user can.
# plant_files NAME KIND: the result directory NAME with server.log,
# router.log and failure.json made KIND beforehand.
plant_files() {
  as_user mkdir "$tmp/u/$1"
  for f in server.log router.log failure.json; do
    case $2 in
      fifo) as_user mkfifo "$tmp/u/$1/$f" ;;
      zero) as_user ln -s /dev/zero "$tmp/u/$1/$f" ;;
      shadow) as_user ln -s /etc/shadow "$tmp/u/$1/$f" ;;
    esac
  done
}
before() {  # before NAME TEXT [ENV...]: a user's step that must fail saying TEXT
  local name=$1 text=$2; shift 2
  run_step "$name" user tp4 "$CLIENT" "$@"
  expect_failure "$name" 10000 "$text"
  after "$name"
  never_followed "$name"
}
plant_files pre-fifo fifo
before pre-fifo "cannot open log 'server.log': it is not a regular file" IX_RESULT_DIR="$tmp/u/pre-fifo"
plant_files pre-zero zero
before pre-zero "cannot open log 'server.log': it is a symbolic link" IX_RESULT_DIR="$tmp/u/pre-zero"
plant_files pre-shadow shadow
before pre-shadow "cannot open log 'server.log': it is a symbolic link" IX_RESULT_DIR="$tmp/u/pre-shadow"
as_user ln -s "$tmp/rootdir" "$tmp/u/result-link"
before result-dir-link "Permission denied" IX_RESULT_DIR="$tmp/u/result-link"
as_user mkfifo "$tmp/u/result-fifo"
before result-dir-fifo "cannot open the result directory $tmp/u/result-fifo" IX_RESULT_DIR="$tmp/u/result-fifo"
# The default result directory, inferencex-JOB.STEP in the working
# directory, a link to a root-owned directory (the job id is the next one).
default=inferencex-$((LAST_JOB + 1)).0
as_user ln -s "$tmp/rootdir" "$tmp/u/$default"
before default-result-link "$tmp/u/$default" -u IX_RESULT_DIR
echo "4. planted FIFOs and links: $((SECONDS - T0)) s"

ix_finish fault_files
