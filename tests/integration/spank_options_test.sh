#!/usr/bin/env bash
# The SPANK plugin on the real local cluster: its options show in srun
# --help, bad values stop srun and sbatch before any allocation with the
# allowed values, and a step without its options is untouched.
# Needs the cluster started (CTest fixture) and SLURM_CONF exported.
set -uo pipefail
RECIPE=dsv41flash-fp4-b300-vllm
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The fake engine records its argv where this says, not in the working directory.
export FAKE_VLLM_RECORD_DIR=$tmp

# A held job's id; two probes around a command show whether it allocated.
probe_id() {
  local id; id=$(sbatch --hold --parsable --job-name=ix-probe --output=/dev/null --wrap true) || return 1
  scancel "$id"; echo "${id%%;*}"
}

# expect_refused NAME PATTERN CMD...: CMD fails, stderr matches, no job made.
expect_refused() {
  local name=$1 pattern=$2; shift 2
  local before after rc
  before=$(probe_id)
  "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  after=$(probe_id)
  [[ $rc -ne 0 ]] || fail "$name: exit 0, expected failure"
  grep -Eq -- "$pattern" "$tmp/err" || { fail "$name: stderr does not match /$pattern/:"; cat "$tmp/err"; }
  [[ $((after - before)) -eq 1 ]] || fail "$name: a job was allocated (probe ids $before, $after)"
  echo "ok: $name refused: $(grep -m1 inferencex "$tmp/err")"
}

# 1. srun --help lists the options with their argument names.
help=$(srun --help 2>&1)
for opt in "--inferencex-arm=ARM" "--inferencex-recipe=NAME" "--inferencex-conc=N"; do
  grep -qF -- "$opt" <<<"$help" || fail "srun --help does not list $opt"
done
echo "ok: srun --help lists the options"

# 2. Bad values fail in srun/sbatch before allocation, naming what is allowed.
expect_refused "unknown arm" "inferencex: --inferencex-arm=nope: unknown arm; allowed: dep16, dep4, dep4-rankproc, tep4, tp4, tp8pp2" \
  srun --inferencex-arm=nope true
expect_refused "unknown arm of the recipe" "unknown arm for recipe $RECIPE; allowed: tp4, tep4, dep4" \
  srun --inferencex-arm=tp9 --inferencex-recipe=$RECIPE --inferencex-conc=8 true
expect_refused "unknown recipe" "unknown recipe 'nope'.*available: $RECIPE" \
  srun --inferencex-arm=tp4 --inferencex-recipe=nope --inferencex-conc=8 true
expect_refused "dep4 at conc 3" "2 x CONC must be divisible by 4" \
  srun --inferencex-arm=dep4 --inferencex-recipe=$RECIPE --inferencex-conc=3 true
expect_refused "bad conc" "--inferencex-conc=abc: expected a whole number from 1 to 1000000" \
  srun --inferencex-arm=tp4 --inferencex-recipe=$RECIPE --inferencex-conc=abc true
# Absurd values are refused in srun, not wrapped around in a job step.
expect_refused "huge conc" "--inferencex-conc=4611686018427387904: expected a whole number from 1 to 1000000" \
  srun --inferencex-arm=tp4 --inferencex-recipe=$RECIPE --inferencex-conc=4611686018427387904 true
expect_refused "unknown KV offload tier" "--inferencex-kv-offload=lmcache: recipe $RECIPE serves no such KV offload tier; allowed: none, vllm-simple, mooncake" \
  srun --inferencex-arm=tp4 --inferencex-recipe=$RECIPE --inferencex-conc=8 --inferencex-kv-offload=lmcache true
expect_refused "bad KV offload budget" "--inferencex-kv-offload-dram-gb=0: expected a number of GB from 1 to 1000000" \
  srun --inferencex-arm=tp4 --inferencex-recipe=$RECIPE --inferencex-conc=8 --inferencex-kv-offload=vllm-simple --inferencex-kv-offload-dram-gb=0 true
expect_refused "huge ready timeout" "--inferencex-ready-timeout=4294967296: expected a number of seconds from 1 to 604800" \
  srun --inferencex-arm=tp4 --inferencex-recipe=$RECIPE --inferencex-conc=8 --inferencex-ready-timeout=4294967296 true
expect_refused "sbatch unknown arm" "unknown arm; allowed: dep16, dep4, dep4-rankproc, tep4, tp4, tp8pp2" \
  sbatch --inferencex-arm=nope --output=/dev/null --wrap true

# 3. A valid combination passes srun's checks and runs (on the fake engine).
PATH=$IX_FAKES_BIN_DIR:$PATH srun --inferencex-arm=dep4 --inferencex-recipe=$RECIPE --inferencex-conc=64 true \
  || fail "valid dep4 options were refused"

# 4. Without its options the plugin does nothing: same output, same exit
#    status, nothing added to the environment, nothing on stderr or in the log.
log_lines=$(wc -l <"$IX_CLUSTER_DIR/log/slurmd.log")
out=$(srun hostname 2>"$tmp/err"); rc=$?
[[ $rc -eq 0 && $out == "$(hostname)" ]] || fail "srun hostname: exit $rc, output '$out'"
# srun's own queueing notes may appear while an earlier job still completes.
grep -Ev '^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$' "$tmp/err" >"$tmp/err.plugin"
[[ ! -s $tmp/err.plugin ]] || { fail "srun hostname wrote to stderr:"; cat "$tmp/err.plugin"; }
srun sh -c 'exit 7' 2>/dev/null; rc=$?
[[ $rc -eq 7 ]] || fail "srun did not pass the task's exit status through (got $rc)"
# A clean caller environment, so only what Slurm and plugins add is seen.
if env -i PATH="$PATH" SLURM_CONF="$SLURM_CONF" srun env | grep -Ei '^IX_|inferencex'; then fail "plugin changed the environment of a plain step"; fi
if tail -n +"$((log_lines + 1))" "$IX_CLUSTER_DIR/log/slurmd.log" | grep -i inferencex; then
  fail "slurmd logged plugin activity for plain steps"
fi
echo "ok: plain steps are untouched"

[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
echo "spank_options: all checks passed"
