#include "vllm_metrics.h"

#include <algorithm>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// Appends the metric families of one /metrics body; `labels` gives a rank's
// label set with the model's name.
class MetricsText {
 public:
  MetricsText(const std::map<int, RankStats>& stats, const std::string& model_name)
      : stats_(stats), model_(prom_escape(model_name)) {}

  std::string labels(int rank, const std::string& extra = "") const {
    return strprintf("{engine=\"%d\",model_name=\"%s\"%s}", rank, model_.c_str(), extra.c_str());
  }
  void header(const char* name, const char* type, const char* help) {
    out += strprintf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  }
  void gauges_and_counters();
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
  header("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
  for (auto& [r, s] : stats_) {
    out += "vllm:kv_cache_usage_perc" + labels(r) +
           strprintf(" %.4f\n", std::min(1.0, 0.01 * static_cast<double>(s.running)));
  }
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

std::vector<double> latency_buckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0};
}

std::string render_metrics(const std::map<int, RankStats>& stats, const std::string& model_name, int first_rank,
                           long long max_model_len) {
  MetricsText m(stats, model_name);
  m.gauges_and_counters();
  m.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &RankStats::e2e);
  m.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &RankStats::ttft);
  m.header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig.");
  m.out += strprintf("vllm:cache_config_info{engine=\"%d\",max_model_len=\"%lld\"} 1.0\n", first_rank, max_model_len);
  return m.out;
}

}  // namespace ixfake::vllm
