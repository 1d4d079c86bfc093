# cluster.sh: sourced by the benchmarks that run job steps (step_bench.sh,
# hang_bench.sh, sweep_bench.sh, agent_bench.sh). Each gets a private local
# cluster of its own (directory and ports), so it neither disturbs nor is
# disturbed by the test cluster, and the fakes first on PATH. The caller
# sets `repo` and `build` and stops the cluster in its EXIT trap.

# bench_cluster NAME CTLD_PORT [PLUGIN_ARG...]: (re)starts /tmp/ix-NAME with
# slurmctld on CTLD_PORT and slurmd on the next port, $build's plugin on the
# 4 TiB HGX B300 topology with the extra plugstack arguments; exports
# SLURM_CONF, PATH (the fakes first) and an instantly ready fake engine.
bench_cluster() {
  local name=$1 ctld=$2; shift 2
  export IX_CLUSTER_DIR=/tmp/ix-$name IX_SLURMCTLD_PORT=$ctld IX_SLURMD_PORT=$((ctld + 1))
  export IX_SPANK_PLUGIN=$build/spank_plugin/spank_inferencex.so IX_RECIPE_DIR=$repo/recipes
  export IX_SPANK_ARGS="topology=$repo/tests/fixtures/topology/hgx-b300-4tib.xml memlock=keep $*"
  "$repo/scripts/local-cluster.sh" restart >/dev/null
  eval "$("$repo/scripts/local-cluster.sh" env)"
  export PATH=$build/tests/fakes/bin:$PATH FAKE_VLLM_START_DELAY_S=0
}

# bench_cluster_stop: stops the cluster bench_cluster started.
bench_cluster_stop() { "$repo/scripts/local-cluster.sh" stop >/dev/null 2>&1 || true; }

# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
