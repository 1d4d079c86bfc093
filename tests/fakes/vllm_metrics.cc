#include "vllm_metrics.h"

#include <algorithm>

#include "fake_common.h"
#include "node_agent/prometheus_text.h"

namespace ixfake::vllm {
namespace {

// Appends the metric families of one /metrics body; `labels` gives a rank's
// label set with the model's name.
class MetricsText {
 public:
  MetricsText(const std::map<int, RankStats>& stats, const std::string& model_name)
      : stats_(stats), model_(ix::EscapeLabelValue(model_name)) {}

  std::string labels(int rank, const std::string& extra = "") const {
    return strprintf("{engine=\"%d\",model_name=\"%s\"%s}", rank, model_.c_str(), extra.c_str());
  }
  void header(const char* name, const char* type, const char* help) {
    out += strprintf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  }
  void gauges_and_counters();
  void kv_cache(bool tier);
  // One counter family (`name` already ends in _total), one sample a rank.
  template <typename F>
  void counter(const char* name, const char* help, F value) {
    header(name, "counter", help);
    for (auto& [r, s] : stats_) out += name + labels(r) + strprintf(" %s\n", number(value(s)).c_str());
  }
  template <typename F>
  void gauge(const char* name, const char* help, F value) {
    header(name, "gauge", help);
    for (auto& [r, s] : stats_) out += name + labels(r) + strprintf(" %.6f\n", static_cast<double>(value(s)));
  }
  static std::string number(unsigned long long v) { return strprintf("%llu.0", v); }
  static std::string number(double v) { return strprintf("%.6f", v); }
  void histogram(const char* name, const char* help, Histogram RankStats::*member);

  std::string out;

 private:
  const std::map<int, RankStats>& stats_;
  std::string model_;
};

void MetricsText::gauges_and_counters() {
  header("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
  for (auto& [r, s] : stats_) out += "vllm:num_requests_running" + labels(r) + strprintf(" %ld.0\n", s.running);
  header("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
  for (auto& [r, s] : stats_) out += "vllm:num_requests_waiting" + labels(r) + " 0.0\n";
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        [](const RankStats& s) { return s.kv.gpu_usage; });
  header("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
  for (auto& [r, s] : stats_) out += "vllm:prompt_tokens_total" + labels(r) + strprintf(" %llu.0\n", s.prompt_tokens);
  header("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
  for (auto& [r, s] : stats_) {
    out += "vllm:generation_tokens_total" + labels(r) + strprintf(" %llu.0\n", s.generation_tokens);
  }
  header("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  for (auto& [r, s] : stats_) {
    out += "vllm:request_success_total" + labels(r, ",finished_reason=\"stop\"") + strprintf(" %llu.0\n", s.success_stop);
    out += "vllm:request_success_total" + labels(r, ",finished_reason=\"length\"") +
           strprintf(" %llu.0\n", s.success_length);
    out += "vllm:request_success_total" + labels(r, ",finished_reason=\"abort\"") + strprintf(" %llu.0\n", s.aborted);
  }
}

// vLLM's prefix-cache counters (tokens) and, with a KV connector's CPU
// tier, its external-cache counters, usage and transfers (bytes, seconds).
void MetricsText::kv_cache(bool tier) {
  counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
          [](const RankStats& s) { return s.kv.counters.queries; });
  counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
          [](const RankStats& s) { return s.kv.counters.hits; });
  header("vllm:prompt_tokens_by_source_total", "counter", "Number of prompt tokens by source.");
  for (auto& [r, s] : stats_) {
    const std::pair<const char*, unsigned long long> sources[] = {
        {"local_compute", s.prompt_local_compute},
        {"local_cache_hit", s.prompt_local_hit},
        {"external_kv_transfer", s.prompt_external}};
    for (const auto& [source, n] : sources) {
      out += "vllm:prompt_tokens_by_source_total" + labels(r, strprintf(",source=\"%s\"", source)) +
             strprintf(" %llu.0\n", n);
    }
  }
  if (!tier) return;
  counter("vllm:external_prefix_cache_queries_total",
          "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of "
          "queried tokens.",
          [](const RankStats& s) { return s.kv.counters.ext_queries; });
  counter("vllm:external_prefix_cache_hits_total",
          "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached "
          "tokens.",
          [](const RankStats& s) { return s.kv.counters.ext_hits; });
  gauge("vllm:cpu_kv_cache_usage_perc", "CPU KV-cache (offload tier) usage. 1 means 100 percent usage.",
        [](const RankStats& s) { return s.kv.cpu_usage; });
  counter("vllm:kv_offload_bytes_gpu_to_cpu_total", "Bytes of KV cache offloaded from GPU to CPU.",
          [](const RankStats& s) { return s.kv.counters.bytes_gpu_to_cpu; });
  counter("vllm:kv_offload_bytes_cpu_to_gpu_total", "Bytes of KV cache loaded from CPU to GPU.",
          [](const RankStats& s) { return s.kv.counters.bytes_cpu_to_gpu; });
  counter("vllm:kv_offload_time_gpu_to_cpu_total", "Seconds spent offloading KV cache from GPU to CPU.",
          [](const RankStats& s) { return s.kv.counters.time_gpu_to_cpu_s; });
  counter("vllm:kv_offload_time_cpu_to_gpu_total", "Seconds spent loading KV cache from CPU to GPU.",
          [](const RankStats& s) { return s.kv.counters.time_cpu_to_gpu_s; });
}

void MetricsText::histogram(const char* name, const char* help, Histogram RankStats::*member) {
  header(name, "histogram", help);
  for (auto& [r, s] : stats_) {
    const Histogram& h = s.*member;
    for (std::size_t i = 0; i < h.bounds.size(); ++i) {
      out += strprintf("%s_bucket", name) + labels(r, strprintf(",le=\"%g\"", h.bounds[i])) +
             strprintf(" %llu.0\n", h.counts[i]);
    }
    out += strprintf("%s_bucket", name) + labels(r, ",le=\"+Inf\"") + strprintf(" %llu.0\n", h.count);
    out += strprintf("%s_sum", name) + labels(r) + strprintf(" %.6f\n", h.sum);
    out += strprintf("%s_count", name) + labels(r) + strprintf(" %llu.0\n", h.count);
  }
}

}  // namespace

void Histogram::observe(double v) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (v <= bounds[i]) ++counts[i];
  }
  sum += v;
  ++count;
}

void count_generated(RankStats& s, const PromptTokens& prompt, int before, int tokens) {
  if (tokens <= 0) return;
  if (before == 0) {
    s.prompt_tokens += static_cast<unsigned long long>(prompt.total);
    s.prompt_local_hit += static_cast<unsigned long long>(prompt.gpu_hit);
    s.prompt_external += static_cast<unsigned long long>(prompt.cpu_hit);
    s.prompt_local_compute += static_cast<unsigned long long>(prompt.total - prompt.gpu_hit - prompt.cpu_hit);
  }
  s.generation_tokens += static_cast<unsigned long long>(tokens);
}

std::vector<double> latency_buckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0};
}

std::string render_metrics(const std::map<int, RankStats>& stats, const std::string& model_name, int first_rank,
                           long long max_model_len, const KvCacheConfig& kv) {
  MetricsText m(stats, model_name);
  m.gauges_and_counters();
  m.kv_cache(kv.tier != TierKind::kNone);
  m.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &RankStats::e2e);
  m.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &RankStats::ttft);
  m.header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig.");
  m.out += strprintf(
      "vllm:cache_config_info{engine=\"%d\",max_model_len=\"%lld\",block_size=\"%d\",num_gpu_blocks=\"%lld\","
      "num_cpu_blocks=\"%s\",enable_prefix_caching=\"%s\"} 1.0\n",
      first_rank, max_model_len, kv.block_size, kv.gpu_blocks,
      kv.tier == TierKind::kNone ? "None" : std::to_string(kv.cpu_blocks).c_str(),
      kv.prefix_caching ? "True" : "False");
  return m.out;
}

}  // namespace ixfake::vllm
