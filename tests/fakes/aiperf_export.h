// The fake AIPerf's request records and the two profile artifacts InferenceX
// reads (tests/fakes/README.md, "aiperf"; the agentic spec's section 5):
// profile_export.jsonl, one record a line, and profile_export_aiperf.json,
// the run's aggregate (request counts, the theoretical prefix-cache hit,
// per-metric statistics, the dataset and the profiling window).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ixfake::aiperf {

// A failed request, as AIPerf's ErrorDetails: `code` the HTTP status when
// there was one, `type` the error's class ("HTTPStatusError" for a non-200,
// "ClientConnectionError", "StreamError"), `message` what went wrong.
struct RequestError {
  std::optional<int> code;
  std::string type;
  std::string message;
};

// One request as sent and answered. Invariants: start_ns <= ack_ns <=
// end_ns when set (wall clock, ns since the epoch); the metrics are set only
// when error is empty (input_len, the asked length, is kept either way).
struct RequestRecord {
  int session_num = 0;  // the lane
  std::string x_request_id;
  std::string x_correlation_id;
  std::string conversation_id;
  int turn_index = 0;
  std::int64_t start_ns = 0;
  std::int64_t ack_ns = 0;
  std::int64_t end_ns = 0;
  bool warmup = false;
  int input_len = 0;  // the trace's input length (what was asked)
  std::optional<int> isl;  // with --use-server-token-count: usage.prompt_tokens
  std::optional<int> osl;
  std::optional<double> ttft_ms;
  std::optional<double> latency_ms;
  std::optional<double> itl_ms;            // (last token - first token) / (osl - 1)
  std::optional<double> full_itl_ms;       // (end of stream - first token) / (osl - 1)
  std::optional<int> served_by_rank;       // X-Served-By-Rank (fake-only)
  std::optional<RequestError> error;
  int prefix_hit_blocks = 0;  // theoretical prefix cache (aiperf_trace.h)
  int prefix_blocks = 0;
};

// One line of profile_export.jsonl (no newline).
std::string record_json(const RequestRecord& r);

// What the aggregate says besides the records.
struct RunInfo {
  std::string benchmark_id;
  std::string aiperf_version = "0.12.0+fake";
  std::string loader;
  std::string hf_dataset;
  int num_dataset_entries = 0;  // traces loaded
  std::string start_time;       // naive local ISO (profiling start)
  std::string end_time;
  double duration_s = 0;        // profiling wall time
  bool was_cancelled = false;   // stopped early (failure threshold)
  std::vector<std::string> invalid_reasons;  // metadata.submission_invalid_reasons
  std::string input_config_json = "{}";      // the command line, as a JSON object
};

// profile_export_aiperf.json, from the records (profiling ones only, except
// warmup_metrics' request counts).
std::string aggregate_json(const std::vector<RequestRecord>& records, const RunInfo& info);

// Statistics of one metric as AIPerf reports them: avg, p1..p99 (linear
// interpolation), min, max, std (population), count, sum.
struct MetricStats {
  double avg = 0, min = 0, max = 0, std = 0, sum = 0;
  std::size_t count = 0;
  std::vector<std::pair<int, double>> percentiles;  // {1, v}, {5, v}, ... {99, v}
};
std::optional<MetricStats> metric_stats(std::vector<double> values);

// "2026-08-20T10:00:00.123456", local time, no zone: what AIPerf writes
// (InferenceX's power adapter reads it with agentic_power_timezone_offset.txt).
std::string naive_local_iso(std::int64_t unix_ns);

}  // namespace ixfake::aiperf
