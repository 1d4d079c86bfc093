// ReportData: what `ixsubmit report` draws, read from one sweep's directory
// (sweep.json, and per entry status.json and agg_RESULT_FILENAME.json, or
// for an agentic-coding entry RESULT_FILENAME.json and its AIPerf
// artifacts: agentic_read.h) by report_source.h, so the drawing
// (report_html.h) is tested without a sweep.
//
// Invariants: entries are in sweep order (index 0..N-1); a metric is set
// only when the entry has a result (has_result); joules_per_output_token
// only when power_valid; log hrefs are relative to the report's own folder;
// `agentic` is empty unless scenario is kScenarioAgentic.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ix {

inline constexpr const char* kScenarioFixedSeqLen = "fixed-seq-len";
inline constexpr const char* kScenarioAgentic = "agentic-coding";

// TTFT of one turn position over an agentic entry's successful profiling
// requests (AIPerf's profile_export.jsonl). Invariant: requests > 0.
struct TurnTtft {
  int64_t turn = 0;  // metadata.turn_index (0: a session's first request)
  int64_t requests = 0;
  double mean_s = 0, p50_s = 0;
};

// One point of KV cache usage over time: the slice's start since the first
// slice of the run, and the highest usage of any engine in it (so one line
// per entry shows whether any DP rank ran full).
struct KvUsagePoint {
  double t_s = 0;
  double end_s = 0;   // the (last merged) slice's end; >= t_s
  double pct = 0;     // 0..100
};

// What the client saw of one data-parallel rank (the "ix" key's dp_ranks):
// unset fields were null or absent.
struct DpRankStats {
  int64_t rank = 0;
  std::optional<int64_t> requests, sessions;
  std::optional<double> prefix_cache_hit_rate;  // 0..1
};

// An agentic-coding entry's own numbers beyond ReportEntry's (InferenceX's
// agentic aggregate, spec §4.4-4.6, and AIPerf's artifacts). Rates are
// fractions (0..1); vectors are empty when their file was missing or
// unreadable.
struct AgenticResult {
  std::string kv_offloading;       // "none", "cpu", ...; "" when unknown
  std::string kv_offload_backend;  // the backend's name; "" for none
  double p50_ttft_s = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> gpu_cache_hit_rate, cpu_cache_hit_rate, overall_cache_hit_rate;
  std::optional<double> gpu_kv_usage_peak;  // server_metrics.kv_cache.gpu_usage_pct (0..1)
  int64_t requests_successful = 0, requests_total = 0;
  std::vector<TurnTtft> ttft_by_turn;  // turn ascending
  bool profile_truncated = false;      // profile_export.jsonl had more lines than were read
  std::vector<KvUsagePoint> kv_usage;  // time ascending, at most kMaxKvUsagePoints (agentic_read.h)
  int64_t kv_engines = 0;              // the engine series kv_usage is the max of
  std::vector<DpRankStats> dp_ranks;   // rank ascending
};

// One sweep entry: where it ran, how it ended, and its numbers as
// InferenceX's agg result has them (seconds, tokens/s, tokens/s/user).
struct ReportEntry {
  int64_t index = 0;
  std::string config_key;  // the InferenceX config key ("dsv41flash-fp4-b300-vllm-...")
  std::string bucket;      // "1k1k", "canary", ...
  std::string scenario = kScenarioFixedSeqLen;  // kScenarioFixedSeqLen or kScenarioAgentic (the matrix entry's scenario-type)
  std::string arm;         // "tp4", "tep4", "dep4", ...
  int64_t conc = 0;
  int64_t gpus = 0;
  std::string state;           // "succeeded", "failed", "running", "pending", "cancelled"
  std::string slurm_job;       // "1234_5" (array task) or "1233" (canary); "" when never started
  std::string failure_reason;  // failure.json's reason or srun's status; "" unless failed
  std::string failure_process; // the process that failed ("vllm-rank2", "router"); may be ""
  std::string placement;       // "GPUs 0-3 · NUMA 0 · cores 0-27,56-83" (readable, as ix-stepd got it)
  std::vector<std::pair<std::string, std::string>> logs;  // (label, relative href), e.g. ("server.log", "results/3/server.log")

  bool has_result = false;
  double tput_per_gpu = 0;         // total tokens/s per GPU
  double output_tput_per_gpu = 0;  // output tokens/s per GPU
  double median_intvty = 0;        // tokens/s/user = 1000 / median TPOT (ms)
  double mean_ttft_s = 0, p99_ttft_s = 0;  // agentic: p99 is NaN (the aggregate has up to p95)
  double median_tpot_s = 0, median_e2el_s = 0;
  bool power_valid = false;
  std::optional<double> joules_per_output_token;
  std::optional<double> avg_power_w;

  // DEP: the sessions each data-parallel rank served (index = rank); empty
  // for arms without a router.
  std::vector<int64_t> sessions_per_rank;

  AgenticResult agentic;  // agentic-coding entries only
};

inline bool IsAgentic(const ReportEntry& e) { return e.scenario == kScenarioAgentic; }

// The whole report: the sweep and its entries (invariants above).
struct ReportData {
  std::string sweep_id;   // "sw-20261205-182233-3f9a"
  std::string mode;       // "full-sweep-fail-fast"
  std::string generated;  // when the report was written, "2026-12-05 18:40:02 UTC"
  std::vector<ReportEntry> entries;
};

}  // namespace ix
