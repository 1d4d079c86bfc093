#!/usr/bin/env bash
# sweep_bench.sh BUILD_DIR [RUNS]: time to submit a 1,002-entry sweep (the
# example row at 334 concurrencies x tp4/tep4/dep4) with `ixsubmit sweep
# --no-watch`, on a private local cluster, against one plain `sbatch` of a
# held job in the same run (the cost of a single submission). The sweep's
# jobs are cancelled right after each run. Prints Markdown; medians of RUNS
# (default 5).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build}; runs=${2:-5}
. "$repo/bench/cluster.sh"
tmp=$(mktemp -d)
trap 'bench_cluster_stop; rm -rf "$tmp"' EXIT
bench_cluster sweep-bench 17937
now_ms() { echo $(($(date +%s%N) / 1000000)); }
concs=$(seq 2 2 668 | tr '\n' ' ')
: >"$tmp/sweep"; : >"$tmp/base"
for i in $(seq "$runs"); do
  t=$(now_ms); sbatch --hold --parsable --wrap true >/dev/null; echo $(($(now_ms) - t)) >>"$tmp/base"
  t=$(now_ms)
  # shellcheck disable=SC2086
  "$build/submitter/ixsubmit" sweep full-sweep-fail-fast --config-files "$repo/recipes/examples/dsv41flash-b300-1k1k.yaml" \
    --config-keys dsv41flash-fp4-b300-vllm --conc $concs --no-watch --no-container \
    --sweep-dir "$tmp/s$i" --db "$tmp/ix.db" -- ix-fake-client >"$tmp/out$i"
  echo $(($(now_ms) - t)) >>"$tmp/sweep"
  scancel --user="$(id -un)"
done
entries=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["entries"]))' "$tmp/s1/sweep.json")
calls=$(grep -c "submitted .* as job" "$tmp/out1")
sweep=$(median <"$tmp/sweep"); base=$(median <"$tmp/base")
echo "| measure (median of $runs) | value | baseline in the same run | ratio | target |"
echo "| --- | --- | --- | --- | --- |"
echo "| submit a $entries-entry sweep ($calls sbatch submissions + 1 --test-only) | $sweep ms | one sbatch: $base ms | $(awk -v a="$sweep" -v b="$base" 'BEGIN {printf "%.1fx", a / b}') | 2000 ms |"
