#include "router_metrics.h"

#include "fake_common.h"
#include "node_agent/prometheus_text.h"

namespace ixfake::router {

std::string Metrics::render(const std::vector<std::string>& workers) {
  std::lock_guard<std::mutex> lock(m_);
  std::string out;
  out += "# HELP vllm_router_requests_total Total number of requests by route\n";
  out += "# TYPE vllm_router_requests_total counter\n";
  for (const auto& [route, n] : requests_) {
    out += strprintf("vllm_router_requests_total{route=\"%s\"} %llu\n", ix::EscapeLabelValue(route).c_str(), n);
  }
  out += "# HELP vllm_router_processed_requests_total Requests sent to each worker\n";
  out += "# TYPE vllm_router_processed_requests_total counter\n";
  for (const auto& [worker, n] : processed_) {
    out += strprintf("vllm_router_processed_requests_total{worker=\"%s\"} %llu\n",
                     ix::EscapeLabelValue(worker).c_str(), n);
  }
  out += "# HELP vllm_router_policy_decisions_total Routing decisions by policy and worker\n";
  out += "# TYPE vllm_router_policy_decisions_total counter\n";
  for (const auto& [worker, n] : processed_) {
    out += strprintf("vllm_router_policy_decisions_total{policy=\"consistent_hash\",worker=\"%s\"} %llu\n",
                     ix::EscapeLabelValue(worker).c_str(), n);
  }
  out += "# HELP vllm_router_request_errors_total Request errors by route and type\n";
  out += "# TYPE vllm_router_request_errors_total counter\n";
  for (const auto& [key, n] : errors_) {
    out += strprintf("vllm_router_request_errors_total{route=\"%s\",error_type=\"%s\"} %llu\n",
                     ix::EscapeLabelValue(key.first).c_str(), ix::EscapeLabelValue(key.second).c_str(), n);
  }
  out += "# HELP vllm_router_active_workers Number of active workers (worker, rank targets)\n";
  out += "# TYPE vllm_router_active_workers gauge\n";
  out += strprintf("vllm_router_active_workers %zu\n", workers.size());
  out += "# HELP vllm_router_running_requests Number of running requests per worker\n";
  out += "# TYPE vllm_router_running_requests gauge\n";
  for (const auto& worker : workers) {
    auto it = running_.find(worker);
    out += strprintf("vllm_router_running_requests{worker=\"%s\"} %ld\n", ix::EscapeLabelValue(worker).c_str(),
                     it == running_.end() ? 0L : it->second);
  }
  out += "# HELP vllm_router_request_duration_seconds Request duration by route\n";
  out += "# TYPE vllm_router_request_duration_seconds histogram\n";
  for (const auto& [route, h] : durations_) {
    std::string r = ix::EscapeLabelValue(route);
    for (std::size_t i = 0; i < bounds().size(); ++i) {
      out += strprintf("vllm_router_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n", r.c_str(),
                       bounds()[i], h.counts[i]);
    }
    out += strprintf("vllm_router_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", r.c_str(),
                     h.count);
    out += strprintf("vllm_router_request_duration_seconds_sum{route=\"%s\"} %.6f\n", r.c_str(), h.sum);
    out += strprintf("vllm_router_request_duration_seconds_count{route=\"%s\"} %llu\n", r.c_str(), h.count);
  }
  return out;
}
}  // namespace ixfake::router
