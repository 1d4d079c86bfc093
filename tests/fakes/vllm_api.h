// The fake engine's HTTP API once it is ready (tests/fakes/README.md,
// "Endpoints"): /health, /ping, /version, /v1/models, /metrics and the
// OpenAI completions, each request served by one data-parallel rank and
// paced by the latency model of that rank's load (vllm_latency.h), and the
// access log. Holds the per-rank counters behind /metrics and the load.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "http_server.h"
#include "vllm_args.h"
#include "vllm_kv_cache.h"
#include "vllm_latency.h"
#include "vllm_metrics.h"
#include "vllm_responses.h"

namespace ixfake::vllm {

// The API server's state (never built on a headless node). Invariant:
// stats_ and caches_ have exactly one entry per served rank
// (cfg().layout.served_ranks); a request counts as running in stats_, and
// holds its blocks in caches_, from the parsed request to the last byte sent
// (or the stream's abort); stats_[r].kv is caches_[r]'s latest snapshot.
// Once a rank is in stalled_, its stats_ entry never changes again except
// `running`, which counts the requests that arrive for it (held forever).
class Engine {
 public:
  explicit Engine(Config cfg);

  const Config& cfg() const { return cfg_; }

  // FAKE_VLLM_HANG_AFTER_S: from now on every request is held before
  // routing, forever; streams already open go on.
  void hang();
  // FAKE_VLLM_STALL_AFTER_S: token generation stops on the ranks the
  // switches name (stalled_ranks): their requests, running and new, get no
  // more tokens and stay running; /health and /metrics keep answering. With
  // FAKE_VLLM_STALL_METRICS the API server's event loop wedges as well:
  // every served rank stalls and every request, /health and /metrics
  // included, is held (tests/fakes/README.md, "Fault switches").
  void stall();

  // Routes, the hold check, the error bodies and the access log.
  void install(http::Server& svr);

 private:
  static void json_error(http::Response& res, int status, const std::string& message, const char* type);
  const std::vector<int>& served() const { return cfg_.layout.served_ranks; }
  bool resolve_rank(const http::Request& req, int& rank, std::string& error) const;
  bool read_request(const http::Request& req, http::Response& res, Call& c, bool& stream,
                    std::vector<std::uint64_t>& token_hashes);
  void admit(Call& c, const std::vector<std::uint64_t>& token_hashes);
  void completion(const http::Request& req, http::Response& res, bool chat);
  void stream(http::Response& res, const Call& c);
  bool send_stream(const Call& call, http::DataSink& sink, double& ttft);
  void pace(const Call& c);
  void generated(const Call& c, int& emitted, int upto);
  // The sequences running on `rank` and in the whole process.
  struct Load {
    long rank = 0;
    long process = 0;
  };
  Load load(int rank);
  void finish_stats(const Call& c, double ttft, bool ok);

  Config cfg_;
  LatencyModel latency_;  // from cfg_.switches; each rank is one "GPU"
  std::mutex stats_mutex_;
  std::map<int, RankStats> stats_;  // guarded by stats_mutex_
  std::map<int, KvCache> caches_;   // guarded by stats_mutex_: one KV cache per rank, so a moved session misses
  std::set<int> stalled_;           // guarded by stats_mutex_: ranks whose generation stopped for good
  std::atomic<const char*> hold_{nullptr};  // why every request is held (a fault's log tag); null: serving
  std::atomic<unsigned long long> next_id_{1};
};

}  // namespace ixfake::vllm
