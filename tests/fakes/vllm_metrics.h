// The fake engine's per-rank counters and their Prometheus text, with vLLM's
// `vllm:` names and `engine`/`model_name` labels (tests/fakes/README.md,
// "/metrics").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "vllm_kv_cache.h"

namespace ixfake::vllm {

// A Prometheus histogram. Invariant: counts has one entry per bound, and
// counts[i] is the number of observations <= bounds[i] (already cumulative).
struct Histogram {
  std::vector<double> bounds;
  std::vector<unsigned long long> counts;
  double sum = 0;
  unsigned long long count = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size(), 0) {}
  void observe(double v);
};

// Seconds: 10 ms to 2 min, as vLLM's latency histograms.
std::vector<double> latency_buckets();

// What one data-parallel rank has served. `running` counts requests started
// and not finished; a finished one counts once, as a success or aborted.
// The prompt_* by source add up to prompt_tokens (both counted at success);
// kv is the rank's KV cache as of its last change (vllm_kv_cache.h).
struct RankStats {
  long running = 0;
  unsigned long long prompt_tokens = 0;
  unsigned long long prompt_local_hit = 0;      // found in the GPU prefix cache
  unsigned long long prompt_local_compute = 0;  // computed
  unsigned long long prompt_external = 0;       // loaded from the CPU tier
  KvSnapshot kv;
  unsigned long long generation_tokens = 0;
  unsigned long long success_stop = 0;
  unsigned long long success_length = 0;
  unsigned long long aborted = 0;
  Histogram e2e{latency_buckets()};
  Histogram ttft{latency_buckets()};
};

// The /metrics body for `stats` (by rank), served as `model_name`;
// cache_config_info is reported for first_rank, with the cache's shape from
// `kv`. The external-cache and offload families appear only when `kv` has a
// tier.
std::string render_metrics(const std::map<int, RankStats>& stats, const std::string& model_name, int first_rank,
                           long long max_model_len, const KvCacheConfig& kv = KvCacheConfig{});

}  // namespace ixfake::vllm
