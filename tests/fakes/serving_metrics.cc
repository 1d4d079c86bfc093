#include "serving_metrics.h"

#include <algorithm>
#include <cmath>

namespace ixfake::client {
namespace {

// numpy.percentile(values, p) with its default linear interpolation;
// `sorted` is non-empty and ascending.
double Percentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace

MetricStats StatsOf(std::vector<double> v) {
  MetricStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(v.size()));
  s.median = Percentile(v, 50);
  s.p90 = Percentile(v, 90);
  s.p99 = Percentile(v, 99);
  s.p99_9 = Percentile(v, 99.9);
  return s;
}

ServingMetrics ComputeServingMetrics(const std::vector<ServedRequest>& requests, double duration_s) {
  ServingMetrics m;
  std::vector<double> ttfts, tpots, itls, e2els;
  for (const ServedRequest& r : requests) {
    ++m.completed;
    m.total_input_tokens += r.prompt_tokens;
    m.total_output_tokens += r.output_tokens;
    ttfts.push_back(r.ttft_ms);
    e2els.push_back(r.latency_ms);
    if (r.output_tokens > 1) {
      const double tpot = (r.latency_ms - r.ttft_ms) / (r.output_tokens - 1);
      tpots.push_back(tpot);
      itls.insert(itls.end(), static_cast<size_t>(r.output_tokens - 1), tpot);
    }
  }
  if (duration_s > 0) {
    m.request_throughput = m.completed / duration_s;
    m.output_throughput = static_cast<double>(m.total_output_tokens) / duration_s;
    m.total_token_throughput = static_cast<double>(m.total_input_tokens + m.total_output_tokens) / duration_s;
  }
  m.ttft = StatsOf(std::move(ttfts));
  m.tpot = StatsOf(std::move(tpots));
  m.itl = StatsOf(std::move(itls));
  m.e2el = StatsOf(std::move(e2els));
  return m;
}

}  // namespace ixfake::client
