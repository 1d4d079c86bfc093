#!/usr/bin/env bash
# ixsubmit sweep end to end on the local cluster with the fake engine and
# client: a clean full-sweep-fail-fast, an injected failure that cancels its
# bucket only, a failing canary that leaves nothing pending, bad input that
# submits nothing, `ixsubmit images import` through srun with an enroot
# double. The local cluster has no Pyxis: sweeps run on the host
# (--no-container), and one without it is refused before submission. Needs
# the CTest cluster fixture, SLURM_CONF, IX_FAKES_BIN_DIR, IXSUBMIT,
# IX_SOURCE_DIR.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ix_require_env SLURM_CONF IX_FAKES_BIN_DIR IXSUBMIT IX_SOURCE_DIR
tmp=$(mktemp -d /tmp/ix-sweep-test.XXXXXX); trap 'rm -rf "$tmp"' EXIT
export FAKE_VLLM_RECORD_DIR=$tmp
cfg=$IX_SOURCE_DIR/recipes/examples/dsv41flash-b300-1k1k.yaml
key=dsv41flash-fp4-b300-vllm
sweep() { "$IXSUBMIT" sweep "$1" --config-files "$cfg" --config-keys "$key" --db "$tmp/ix.db" --throttle 2 --no-container "${@:2}"; }
# Nothing pending or running is left (jobs still COMPLETING get 5 s to finish).
queue_empty() {
  local i
  for i in $(seq 50); do
    [[ -z $(squeue -h -u "$(id -un)" --states=PENDING,RUNNING,COMPLETING,SUSPENDED) ]] && return 0
    sleep 0.1
  done
  return 1
}

# 1. A small clean sweep: the canary first, then the bucket after it.
sweep full-sweep-fail-fast --conc 2 8 --sweep-dir "$tmp/ok" -- ix-fake-client --sessions 2 --turns 2 >"$tmp/ok.out" 2>&1 ||
  fail "clean sweep failed: $(tail -5 "$tmp/ok.out")"
grep -q "submitted bucket:1k1k as job [0-9]* (.*after job" "$tmp/ok.out" || fail "the bucket did not depend on the canary: $(cat "$tmp/ok.out")"
# Every entry: the client's RESULT_FILENAME.json, the agg result beside it
# and the environment contract they were made with (docs/RESULTS.md).
n=$(ls "$tmp"/ok/results/*/agg_*.json 2>/dev/null | wc -l)
[[ $n -eq 6 ]] || fail "clean sweep: $n agg results, expected 6 (tp4, tep4, dep4 at conc 2 and 8)"
for d in "$tmp"/ok/results/*/; do
  ( set -a && . "$d/benchmark.env" && [[ -f $d/$RESULT_FILENAME.json && -f $d/agg_$RESULT_FILENAME.json ]] ) ||
    fail "$d: no RESULT_FILENAME.json or agg beside benchmark.env: $(ls "$d")"
done
echo "ok: clean sweep: $(tail -1 "$tmp/ok.out")"

# 2. The expert-parallel entries' API servers exit at start (tep4, dep4): under
#    fail-fast the bucket stops at the first and the exit status is non-zero.
FAKE_VLLM_EXIT0_AFTER_S=0.001 FAKE_VLLM_FAULT_ONLY_IF_ARG=--enable-expert-parallel \
  sweep full-sweep-fail-fast --conc 2 8 --sweep-dir "$tmp/ff" -- ix-fake-client --sessions 2 --turns 50 >"$tmp/ff.out" 2>&1 &&
  fail "fail-fast sweep exited 0"
grep -q "fail-fast" "$tmp/ff.out" || fail "fail-fast: no cancellation: $(tail -5 "$tmp/ff.out")"
"$IXSUBMIT" status --db "$tmp/ix.db" "$(grep -o 'sw-[0-9-]*[0-9a-f]*' "$tmp/ff.out" | head -1)" >"$tmp/ff.status"
grep -q "failed" "$tmp/ff.status" || fail "fail-fast: no failed entry: $(cat "$tmp/ff.status")"
queue_empty || fail "fail-fast: jobs left: $(squeue -h)"
echo "ok: fail-fast: $(tail -1 "$tmp/ff.out")"

# 3. The same fault without fail-fast: every other entry completes.
FAKE_VLLM_EXIT0_AFTER_S=0.001 FAKE_VLLM_FAULT_ONLY_IF_ARG=--enable-expert-parallel \
  sweep full-sweep-enabled --conc 2 8 --sweep-dir "$tmp/nf" -- ix-fake-client --sessions 2 --turns 50 >"$tmp/nf.out" 2>&1 &&
  fail "full-sweep-enabled with a failure exited 0"
grep -q "done 2, failed 4" "$tmp/nf.out" || fail "full-sweep-enabled: $(tail -3 "$tmp/nf.out")"
echo "ok: no fail-fast: $(tail -1 "$tmp/nf.out")"

# 4. A failing canary: its dependents are cancelled explicitly, nothing is left pending.
FAKE_VLLM_NEVER_READY=1 sweep full-sweep-fail-fast --conc 2 8 --sweep-dir "$tmp/cf" -- ix-fake-client >"$tmp/cf.out" 2>&1 &
pid=$!
# never ready: the step's ready timeout would be an hour; fail the canary's step by cancelling it
for _ in $(seq 100); do grep -q "submitted bucket" "$tmp/cf.out" && break; sleep 0.1; done
canary=$(grep -o "submitted canary as job [0-9]*" "$tmp/cf.out" | grep -o "[0-9]*$")
sleep 2; scancel "$canary"
wait $pid && fail "canary failure: sweep exited 0"
grep -q "the canary failed" "$tmp/cf.out" || fail "canary failure: dependents not cancelled: $(tail -5 "$tmp/cf.out")"
queue_empty || fail "canary failure: left in the queue: $(squeue -h)"
echo "ok: failed canary: $(tail -1 "$tmp/cf.out")"

# The canary job ended before the bucket's first task started (afterok).
canary_first() {
  python3 - "$1" <<'PY'
import glob, json, sys
d = sys.argv[1]
plan = json.load(open(d + "/sweep.json"))
st = {e["index"]: json.load(open(f"{d}/results/{e['index']}/status.json")) for e in plan["entries"]
      if glob.glob(f"{d}/results/{e['index']}/status.json")}
canary = [e["index"] for e in plan["entries"] if e["job"] == "canary"]
if canary:
    rest = [st[i]["started_at"] for i in st if i not in canary]
    assert rest and min(rest) >= st[canary[0]]["ended_at"], (st[canary[0]], min(rest) if rest else None)
PY
}
count_jobs() { squeue -h --states=all -o '%F %j' | awk -v p="ix-$1-" 'index($2, p) == 1 {print $1}' | sort -u | wc -l; }

# 5. Each mode on the small selection: which jobs, how many entries, in which order, final state.
for spec in "sweep-enabled 0 3" "full-sweep-enabled 1 6" "full-sweep-fail-fast 1 6" \
            "full-sweep-fail-fast-no-canary 0 6" "non-canary-full-sweep-enabled 0 6"; do
  read -r mode canaries entries <<<"$spec"
  sweep "$mode" --conc 2 8 --sweep-dir "$tmp/m-$mode" -- ix-fake-client --sessions 2 --turns 2 >"$tmp/m-$mode.out" 2>&1 ||
    fail "$mode: exit $?: $(tail -3 "$tmp/m-$mode.out")"
  id=$(grep -o 'sw-[0-9]*-[0-9]*-[0-9a-f]*' "$tmp/m-$mode.out" | head -1)
  n=$(grep -c "submitted canary" "$tmp/m-$mode.out")
  [[ $n -eq $canaries ]] || fail "$mode: $n canary jobs, expected $canaries"
  [[ $(count_jobs "$id") -eq $((canaries + 1)) ]] || fail "$mode: $(count_jobs "$id") jobs in Slurm, expected $((canaries + 1))"
  "$IXSUBMIT" status --db "$tmp/ix.db" "$id" >"$tmp/m-$mode.status"
  got=$(grep -c " succeeded " "$tmp/m-$mode.status")
  [[ $got -eq $entries ]] || fail "$mode: $got entries succeeded, expected $entries: $(cat "$tmp/m-$mode.status")"
  canary_first "$tmp/m-$mode" || fail "$mode: the bucket started before the canary ended"
done
echo "ok: every mode ran its jobs in order"

# 6. A bucket waits on the canary: while the canary runs, the array is pending on afterok.
FAKE_VLLM_START_DELAY_S=30 sweep full-sweep-enabled --conc 2 8 --no-watch --sweep-dir "$tmp/dep" -- ix-fake-client \
  >"$tmp/dep.out" 2>&1 || fail "dependency sweep: $(tail -3 "$tmp/dep.out")"
canary=$(grep -o "submitted canary as job [0-9]*" "$tmp/dep.out" | grep -o "[0-9]*$")
bucket=$(grep -o "submitted bucket:1k1k as job [0-9]*" "$tmp/dep.out" | grep -o "[0-9]*$")
scontrol -o show job "$bucket" | grep -q "Dependency=afterok:${canary}" ||
  fail "the bucket does not depend on the canary: $(scontrol -o show job "$bucket" | grep -o 'Dependency=[^ ]*' | head -1)"
scancel "$canary" "$bucket"
echo "ok: the bucket array waits on afterok:$canary"

# 7. The submitter SIGKILLed while watching, then resumed: the sweep completes,
#    nothing is submitted twice, every entry is recorded.
sweep full-sweep-enabled --conc 2 8 --sweep-dir "$tmp/rs" -- ix-fake-client --sessions 2 --turns 20 >"$tmp/rs.out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "submitted bucket" "$tmp/rs.out" && break; sleep 0.1; done
# $! is the subshell running the function: ixsubmit is its child.
sleep 1; kill -9 $(pgrep -P $pid) $pid; wait $pid 2>/dev/null
id=$(grep -o 'sw-[0-9]*-[0-9]*-[0-9a-f]*' "$tmp/rs.out" | head -1)
"$IXSUBMIT" sweep --resume "$id" --db "$tmp/ix.db" >"$tmp/rs2.out" 2>&1 || fail "resume: $(tail -3 "$tmp/rs2.out")"
grep -q "submitted" "$tmp/rs2.out" && fail "resume submitted again: $(cat "$tmp/rs2.out")"
[[ $(count_jobs "$id") -eq 2 ]] || fail "resume: $(count_jobs "$id") jobs, expected 2"
"$IXSUBMIT" status --db "$tmp/ix.db" "$id" >"$tmp/rs.status"
[[ $(grep -c " succeeded " "$tmp/rs.status") -eq 6 ]] || fail "resume: $(cat "$tmp/rs.status")"
echo "ok: killed and resumed: $(tail -1 "$tmp/rs2.out")"

# 8. SIGKILLed between sbatch's answer and the database (an sbatch that kills
#    its caller): the resumed submitter finds the array by its name.
mkdir -p "$tmp/wrap"
cat >"$tmp/wrap/sbatch" <<SH
#!/bin/bash
$(command -v sbatch) "\$@"; rc=\$?
[[ " \$* " == *" --array="* && " \$* " != *" --test-only "* ]] && kill -9 \$PPID
exit \$rc
SH
chmod +x "$tmp/wrap/sbatch"
PATH=$tmp/wrap:$PATH sweep full-sweep-enabled --conc 2 8 --sweep-dir "$tmp/lk" -- ix-fake-client --sessions 2 --turns 2 \
  >"$tmp/lk.out" 2>&1 && fail "the sbatch wrapper did not kill the submitter"
id=$(grep -o 'sw-[0-9]*-[0-9]*-[0-9a-f]*' "$tmp/lk.out" | head -1)
"$IXSUBMIT" sweep --resume "$id" --db "$tmp/ix.db" >"$tmp/lk2.out" 2>&1 || fail "lookup resume: $(tail -3 "$tmp/lk2.out")"
grep -q "was submitted before the interruption" "$tmp/lk2.out" || fail "lookup resume: $(cat "$tmp/lk2.out")"
[[ $(count_jobs "$id") -eq 2 ]] || fail "lookup resume: $(count_jobs "$id") jobs, expected 2"
echo "ok: a job sbatch made before the kill was found by name, not submitted again"

# 8b. sbatch's answer lost (exit 0, no job id: what a timed-out sbatch leaves):
#     the submitter looks the job up by name at once instead of guessing.
cat >"$tmp/wrap/sbatch" <<SH
#!/bin/bash
if [[ " \$* " == *" --array="* && " \$* " != *" --test-only "* ]]; then $(command -v sbatch) "\$@" >/dev/null; exit \$?; fi
exec $(command -v sbatch) "\$@"
SH
PATH=$tmp/wrap:$PATH sweep full-sweep-enabled --conc 2 8 --sweep-dir "$tmp/lost" -- ix-fake-client --sessions 2 --turns 2 \
  >"$tmp/lost.out" 2>&1 || fail "lost answer: $(tail -3 "$tmp/lost.out")"
grep -q "sbatch's answer for .* was lost; found it by name as job" "$tmp/lost.out" || fail "lost answer: $(cat "$tmp/lost.out")"
id=$(grep -o 'sw-[0-9]*-[0-9]*-[0-9a-f]*' "$tmp/lost.out" | head -1)
[[ $(count_jobs "$id") -eq 2 ]] || fail "lost answer: $(count_jobs "$id") jobs, expected 2"
echo "ok: a lost sbatch answer was found by name, nothing submitted twice"

# 8c. While a sweep is watched: a second submitter on it and a new sweep in
#     its directory are refused, naming the holder and the live sweep.
FAKE_VLLM_START_DELAY_S=30 sweep full-sweep-enabled --conc 2 8 --sweep-dir "$tmp/busy" -- ix-fake-client >"$tmp/busy.out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "submitted bucket" "$tmp/busy.out" && break; sleep 0.1; done
id=$(grep -o 'sw-[0-9]*-[0-9]*-[0-9a-f]*' "$tmp/busy.out" | head -1)
out=$("$IXSUBMIT" sweep --resume "$id" --db "$tmp/ix.db" 2>&1) && fail "a second submitter on $id was accepted"
grep -q "is in use by another ixsubmit (pid [0-9]* on .*, sweep $id; .*watch with .ixsubmit status $id" <<<"$out" ||
  fail "second submitter: $out"
out=$(sweep full-sweep-enabled --conc 2 8 --sweep-dir "$tmp/busy" -- ix-fake-client 2>&1) && fail "a live sweep's directory was reused"
grep -q "sweep directory $tmp/busy is in use by another ixsubmit (pid [0-9]* on .*, sweep $id; .*needs another --sweep-dir" <<<"$out" ||
  fail "reused directory: $out"
kill -9 $(pgrep -P $pid) $pid; wait $pid 2>/dev/null
scancel $(squeue -h --states=all -o '%F %j' | awk -v p="ix-$id-" 'index($2, p) == 1 {print $1}' | sort -u)
queue_empty || fail "busy sweep: jobs left: $(squeue -h)"
echo "ok: a second submitter and a reused live directory are refused"

# 9. On a terminal: a progress bar per job, and Ctrl-C asks; "c" cancels the sweep.
python3 - "$IXSUBMIT" "$cfg" "$key" "$tmp" <<'PY' || fail "terminal display / Ctrl-C"
import os, pty, sys, time
ixsubmit, cfg, key, tmp = sys.argv[1:5]
argv = [ixsubmit, "sweep", "full-sweep-enabled", "--no-container", "--config-files", cfg, "--config-keys", key, "--db", tmp + "/ix.db",
        "--conc", "2", "8", "--throttle", "1", "--sweep-dir", tmp + "/tty", "--", "ix-fake-client", "--sessions", "2",
        "--turns", "200"]
pid, fd = pty.fork()
if pid == 0:
    os.execv(ixsubmit, argv)
out = b""
def read_until(token, seconds):
    global out
    end = time.time() + seconds
    while token not in out and time.time() < end:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
    return token in out
assert read_until(b"bucket:1k1k (job", 60), out[-2000:]
assert b"\x1b[" in out and b"[" in out and b"elapsed" in out, out[-2000:]   # redrawn bars
os.write(fd, b"\x03")                                                       # Ctrl-C on the terminal
assert read_until(b"[c/L]", 20), out[-2000:]
os.write(fd, b"c\n")
assert read_until(b"cancelled", 20), out[-2000:]
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 130, status
print("ok: terminal: progress bars, Ctrl-C, cancel (exit 130)")
PY
queue_empty || fail "Ctrl-C cancel left jobs: $(squeue -h)"

# 10. Bad input: clear errors, nothing submitted.
before=$(squeue -h | wc -l)
out=$("$IXSUBMIT" sweep no-such-mode --config-files "$cfg" -- c 2>&1) && fail "unknown mode accepted"
grep -q "full-sweep-fail-fast" <<<"$out" || fail "unknown mode: $out"
out=$(sweep full-sweep-fail-fast --config-keys nope-* --sweep-dir "$tmp/b1" -- c 2>&1) && fail "unmatched key accepted"
echo "ok: unmatched key: $out"
out=$(sweep full-sweep-fail-fast --sweep-dir "$tmp/b2" --partition nope -- c 2>&1) && fail "bad partition accepted"
grep -q "nothing was submitted" <<<"$out" || fail "bad partition: $out"
echo "ok: bad partition: $(tail -1 <<<"$out")"
out=$(sweep full-sweep-fail-fast --recipe-dir "$tmp" --sweep-dir "$tmp/b3" -- c 2>&1) && fail "no recipe accepted"
grep -q "no recipe in" <<<"$out" || fail "no recipe: $out"
out=$(sweep full-sweep-fail-fast --conc 3 --sweep-dir "$tmp/b4" -- c 2>&1) && fail "dep4 at conc 3 accepted"
grep -q "not whole for CONC=3" <<<"$out" || fail "conc 3: $out"
# Containers are the default; without Pyxis in srun (this cluster, unless
# its plugstack.conf lists a Pyxis) a container sweep is refused at once.
if ! srun --help 2>&1 | grep -q -- --container-image; then
  out=$("$IXSUBMIT" sweep full-sweep-fail-fast --config-files "$cfg" --config-keys "$key" --db "$tmp/ix.db" \
    --sweep-dir "$tmp/b5" -- c 2>&1) && fail "a container sweep was accepted without Pyxis"
  grep -q "srun has no --container-image option.*--no-container.*nothing was submitted" <<<"$out" || fail "no Pyxis: $out"
  echo "ok: no Pyxis: $(tail -1 <<<"$out")"
fi
out=$("$IXSUBMIT" sweep full-sweep-fail-fast --config-files "$cfg" --config-keys "$key" --db "$tmp/ix.db" \
  --squash-dir "$tmp/none" --sweep-dir "$tmp/b6" -- c 2>&1) && fail "a missing squash dir was accepted"
grep -q -- "--squash-dir $tmp/none: no such directory" <<<"$out" || fail "missing squash dir: $out"
[[ $(squeue -h | wc -l) -eq $before ]] || fail "bad input submitted jobs"
echo "ok: bad input refused before anything was submitted"

# 11. images import: one srun step per missing image, flock and an enroot
#     double on the node; a second run finds the file and runs nothing.
mkdir -p "$tmp/enroot/bin" "$tmp/squash"
cat >"$tmp/enroot/bin/enroot" <<'SH'
#!/bin/bash
[[ $1 == import && $2 == -o && ! -e $3 ]] || exit 3
echo "$SLURM_JOB_ID $4" >"$3"
SH
chmod +x "$tmp/enroot/bin/enroot"
PATH=$tmp/enroot/bin:$PATH "$IXSUBMIT" images import --squash-dir "$tmp/squash" vllm/vllm-openai:v0.11.0 \
  >"$tmp/img.out" 2>&1 || fail "images import: $(cat "$tmp/img.out")"
grep -q "^[0-9]* docker://vllm/vllm-openai:v0.11.0$" "$tmp/squash/vllm_vllm-openai_v0.11.0.sqsh" ||
  fail "images import: not imported in a job step: $(cat "$tmp/img.out")"
PATH=$tmp/enroot/bin:$PATH "$IXSUBMIT" images import --squash-dir "$tmp/squash" vllm/vllm-openai:v0.11.0 \
  >"$tmp/img2.out" 2>&1 && grep -q "1 already there" "$tmp/img2.out" || fail "images import again: $(cat "$tmp/img2.out")"
echo "ok: images import: $(tail -1 "$tmp/img.out")"

ix_finish "${0##*/}"
