// The fake vllm-router's Prometheus counters (tests/fakes/README.md,
// "Endpoints": vllm_router_* on --prometheus-port).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ixfake::router {

// Counters by route, worker and error type, request durations, and the
// requests running per worker; safe from any thread (one mutex).
class Metrics {
 public:
  void request(const std::string& route) {
    std::lock_guard<std::mutex> lock(m_);
    ++requests_[route];
  }
  void routed(const std::string& worker) {
    std::lock_guard<std::mutex> lock(m_);
    ++processed_[worker];
  }
  void error(const std::string& route, const std::string& type) {
    std::lock_guard<std::mutex> lock(m_);
    ++errors_[{route, type}];
  }
  void duration(const std::string& route, double seconds) {
    std::lock_guard<std::mutex> lock(m_);
    auto& h = durations_[route];
    if (h.counts.empty()) h.counts.assign(bounds().size(), 0);
    for (std::size_t i = 0; i < bounds().size(); ++i) {
      if (seconds <= bounds()[i]) ++h.counts[i];
    }
    h.sum += seconds;
    ++h.count;
  }

  // A request routed to `worker` starts (+1) or ends (-1): the gauge
  // vllm_router_running_requests{worker}, as the real router names it.
  void running(const std::string& worker, int delta) {
    std::lock_guard<std::mutex> lock(m_);
    running_[worker] += delta;
  }

  // The Prometheus text of everything counted; `workers` are the targets'
  // keys (vllm_router_active_workers is their number, and each has a
  // running gauge, 0 until a request runs there).
  std::string render(const std::vector<std::string>& workers);

 private:
  struct Hist {
    std::vector<unsigned long long> counts;
    double sum = 0;
    unsigned long long count = 0;
  };
  static const std::vector<double>& bounds() {
    static const std::vector<double> b = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
    return b;
  }
  std::mutex m_;
  std::map<std::string, unsigned long long> requests_;
  std::map<std::string, unsigned long long> processed_;
  std::map<std::pair<std::string, std::string>, unsigned long long> errors_;
  std::map<std::string, Hist> durations_;
  std::map<std::string, long> running_;
};

// One request counted in Metrics::running for `worker` while this lives; the
// router keeps it until the response to its client is over, so a request
// held by FAKE_ROUTER_STALL_AFTER_S counts for good.
class RunningRequest {
 public:
  RunningRequest(Metrics& m, std::string worker) : m_(m), worker_(std::move(worker)) { m_.running(worker_, 1); }
  ~RunningRequest() { m_.running(worker_, -1); }
  RunningRequest(const RunningRequest&) = delete;
  RunningRequest& operator=(const RunningRequest&) = delete;

 private:
  Metrics& m_;
  std::string worker_;
};

}  // namespace ixfake::router
