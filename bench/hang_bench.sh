#!/usr/bin/env bash
# hang_bench.sh BUILD_DIR [RUNS] [HANG_AFTER]: how fast a hang ends a dep4
# step (docs/STEP.md, "Hangs"), on a private local cluster (its own
# directory, ports and port range), against the crash path measured in the
# same run:
#  - baseline, crash to exit: an EngineCore's crash (fault switch) to srun's
#    exit, the path every failure takes after it is seen;
#  - stall to exit: DP rank 1 stops making tokens with requests running
#    (FAKE_VLLM_STALL_AFTER_S, the fake's own log line, ms, UTC) to srun's
#    exit; minus HANG_AFTER it is what detection adds (the poll period, the
#    diagnosis, the stop);
#  - of which found to exit: failure.json's time (when ix-stepd judged it
#    hung) to srun's exit: the diagnosis and the stop;
#  - wedge to exit: the engine stopped outright (SIGSTOP: no answer at all)
#    to srun's exit, found by its metrics' silence for HANG_AFTER or three
#    missed health probes (750 ms apart), whichever comes first.
# Every step's client keeps requests in flight on every rank. Prints
# Markdown. Medians over RUNS (default 7); HANG_AFTER in seconds (default 2).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build}; runs=${2:-7}; hang_after=${3:-2}
. "$repo/bench/cluster.sh"
shm=/dev/shm/ix-hang-bench
rm -rf "$shm"; mkdir -m 0755 -p "$shm"
tmp=$(mktemp -d)
trap 'bench_cluster_stop; rm -rf "$shm" "$tmp"' EXIT
bench_cluster hang-bench 17947 lease_dir=$shm/ports run_dir=$shm/steps port_range=10000-14999
export FAKE_VLLM_RECORD_DIR=$tmp
opts=(--gres=gpu:4 --inferencex-recipe=dsv41flash-fp4-b300-vllm --inferencex-arm=dep4 --inferencex-conc=64
      --inferencex-hang-after="$hang_after")
busy='ix-fake-client --sessions 16 --turns 400 --out "$IX_RESULT_DIR/result.json"'
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
# The ms (UTC) of the first line of FILE matching PATTERN, as the fakes stamp it.
stamp() { date -d "$(grep -m1 "$2" "$1" | cut -d' ' -f1)" +%s%3N; }
# step NAME ENV...: one dep4 step running the busy client; srun's end in ms.
step() {
  local name=$1; shift
  rm -rf "${tmp:?}/$name"; mkdir -p "$tmp/$name"
  env "$@" IX_RESULT_DIR="$tmp/$name" srun "${opts[@]}" bash -c "$busy" >/dev/null 2>&1 || true
  now_ms >"$tmp/$name/end"
}

: >"$tmp/crash.ms"; : >"$tmp/stall.ms"; : >"$tmp/found.ms"; : >"$tmp/wedge.ms"
for _ in $(seq "$runs"); do
  step crash FAKE_VLLM_CRASH_ENGINE_AFTER_S=1
  echo $(($(cat "$tmp/crash/end") - $(stamp "$tmp/crash/server.log" 'EngineCore encountered a fatal error'))) >>"$tmp/crash.ms"
  step stall FAKE_VLLM_STALL_AFTER_S=1 FAKE_VLLM_STALL_RANK=1
  onset=$(stamp "$tmp/stall/server.log" 'fault FAKE_VLLM_STALL_AFTER_S: token generation stops')
  found=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["time_unix_ms"])' "$tmp/stall/failure.json")
  echo $(($(cat "$tmp/stall/end") - onset)) >>"$tmp/stall.ms"
  echo $(($(cat "$tmp/stall/end") - found)) >>"$tmp/found.ms"
  # SIGSTOP 1 s into the client's run; its time is taken right after.
  rm -rf "$tmp/wedge"; mkdir -p "$tmp/wedge"
  IX_RESULT_DIR="$tmp/wedge" srun "${opts[@]}" bash -c "$busy & sleep 1; pkill -STOP -x vllm; echo \${EPOCHREALTIME/./} >\"\$IX_RESULT_DIR/stopped\"; wait" \
    >/dev/null 2>&1 || true
  end=$(now_ms); pkill -CONT -x vllm 2>/dev/null || true
  echo $((end - $(cat "$tmp/wedge/stopped") / 1000)) >>"$tmp/wedge.ms"
done
crash=$(median <"$tmp/crash.ms"); stall=$(median <"$tmp/stall.ms"); found=$(median <"$tmp/found.ms"); wedge=$(median <"$tmp/wedge.ms")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
echo "| measure (dep4, median of $runs, hang_after $hang_after s) | value | baseline in the same run | ratio |"
echo "| --- | --- | --- | --- |"
echo "| EngineCore crash to srun exit | $crash ms | | |"
echo "| DP rank 1 stalls to srun exit | $stall ms | hang_after + crash to exit: $((hang_after * 1000 + crash)) ms | $(ratio "$stall" $((hang_after * 1000 + crash))) |"
echo "| of which: judged hung to srun exit (diagnosis, stop) | $found ms | crash to exit: $crash ms | $(ratio "$found" "$crash") |"
echo "| engine stopped outright (SIGSTOP) to srun exit | $wedge ms | hang_after + crash to exit: $((hang_after * 1000 + crash)) ms | $(ratio "$wedge" $((hang_after * 1000 + crash))) |"
