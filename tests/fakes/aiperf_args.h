// The fake AIPerf's command line (tests/fakes/README.md, "aiperf"): exactly
// the `aiperf profile` line InferenceX's build_replay_cmd builds, parsed
// strictly, so a flag InferenceX adds, renames or drops shows as an error
// here instead of being silently ignored.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fake_common.h"

namespace ixfake::aiperf {

// The scenario build_replay_cmd always names, the only one the fake runs.
inline constexpr const char* kScenario = "inferencex-agentx-mvp";
// The scenario's minimum --benchmark-duration without --unsafe-override.
inline constexpr double kMinDurationS = 900;

// One `aiperf profile` run. Invariants after parse_profile succeeds:
// concurrency >= 1; duration_s > 0 and (>= kMinDurationS or unsafe_override);
// 0 <= failed_request_threshold <= 1; 0 <= start_min_ratio <= start_max_ratio
// <= 1; slice_duration_s > 0; url is valid with no trailing "/"; loader is one
// of the public loaders and hf_dataset its dataset; metrics_urls holds every
// --server-metrics URL and then <url>/metrics, without duplicates.
struct Config {
  std::string scenario;
  std::string url_text;  // as given, without a trailing "/"
  HttpUrl url;
  std::string endpoint = "/v1/chat/completions";
  std::string endpoint_type = "chat";
  bool streaming = false;
  std::string model;
  std::string tokenizer;
  int concurrency = 1;
  double duration_s = 1800;
  double stats_interval_s = 30;
  unsigned long long random_seed = 0;
  double failed_request_threshold = 1.0;
  double start_min_ratio = 0.25, start_max_ratio = 0.75;  // --trajectory-start-{min,max}-ratio
  int warmup_requests_per_lane = 0;
  double trace_idle_gap_cap_s = 300;
  double warmup_grace_period_s = 1800;
  bool use_server_token_count = false;
  std::vector<std::string> extra_inputs;  // "key:value", sent in every request body
  bool dynamo_conv_aware_routing = false;
  double dynamo_session_timeout_s = 3600;
  bool no_gpu_telemetry = false;
  bool tokenizer_trust_remote_code = false;
  std::optional<int> max_context_length;
  int num_dataset_entries = 100;
  double slice_duration_s = 1.0;
  std::vector<std::string> metrics_urls;
  std::string output_dir = "artifacts";
  bool unsafe_override = false;
  std::string loader;
  std::string hf_dataset;
  // Environment: AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID=1 (or true).
  bool session_header_from_correlation_id = false;
};

// The HF dataset of a public loader name (benchmark_lib.sh's
// resolve_trace_source), or "" for a name that is not one of the 14.
std::string hf_dataset_of(const std::string& loader);

// Parses argv[1..] ("profile" then the flags) and the environment variable
// above. On error returns nullopt and sets `error` to one line naming the
// offending flag or value (the caller prints it and exits 2).
std::optional<Config> parse_profile(const std::vector<std::string>& args, bool session_header_env,
                                    std::string& error);

}  // namespace ixfake::aiperf
