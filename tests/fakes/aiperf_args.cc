#include "aiperf_args.h"

#include <cmath>
#include <cstdlib>
#include <utility>

namespace ixfake::aiperf {
namespace {

const std::vector<OptionSpec>& specs() {
  static const std::vector<OptionSpec> kSpecs = {
      {"--scenario", Arity::kOne, "SCENARIO"},
      {"--url", Arity::kOne, "URL"},
      {"--endpoint", Arity::kOne, "PATH"},
      {"--endpoint-type", Arity::kOne, "TYPE"},
      {"--streaming", Arity::kNone, ""},
      {"--model", Arity::kOne, "MODEL"},
      {"--tokenizer", Arity::kOne, "TOKENIZER"},
      {"--concurrency", Arity::kOne, "N"},
      {"--benchmark-duration", Arity::kOne, "SECONDS"},
      {"--stats-interval", Arity::kOne, "SECONDS"},
      {"--random-seed", Arity::kOne, "SEED"},
      {"--failed-request-threshold", Arity::kOne, "FRACTION"},
      {"--trajectory-start-min-ratio", Arity::kOne, "RATIO"},
      {"--trajectory-start-max-ratio", Arity::kOne, "RATIO"},
      {"--warmup-requests-per-lane", Arity::kOne, "N"},
      {"--trace-idle-gap-cap-seconds", Arity::kOne, "SECONDS"},
      {"--warmup-grace-period", Arity::kOne, "SECONDS"},
      {"--use-server-token-count", Arity::kNone, ""},
      {"--extra-inputs", Arity::kMany, "KEY:VALUE"},
      {"--use-dynamo-conv-aware-routing", Arity::kNone, ""},
      {"--dynamo-session-timeout-seconds", Arity::kOne, "SECONDS"},
      {"--no-gpu-telemetry", Arity::kNone, ""},
      {"--tokenizer-trust-remote-code", Arity::kNone, ""},
      {"--max-context-length", Arity::kOne, "TOKENS"},
      {"--num-dataset-entries", Arity::kOne, "N"},
      {"--slice-duration", Arity::kOne, "SECONDS"},
      {"--server-metrics", Arity::kMany, "URL"},
      {"--output-artifact-dir", Arity::kOne, "DIR"},
      {"--unsafe-override", Arity::kNone, ""},
      {"--public-dataset", Arity::kOne, "LOADER"},
  };
  return kSpecs;
}

std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string strip_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// Reads the flags into `cfg`; returns an error line or "".
std::string read_flags(const StrictArgs& a, Config& cfg) {
  auto bad = [](const std::string& flag, const std::string& value, const char* want) {
    return "invalid value '" + value + "' for " + flag + ": " + want;
  };
  auto number = [&](const char* flag, double min, double max, double& out) -> std::string {
    if (auto v = a.value(flag)) {
      auto n = parse_number(*v);
      if (!n || *n < min || *n > max) return bad(flag, *v, strprintf("a number in [%g, %g]", min, max).c_str());
      out = *n;
    }
    return {};
  };
  auto integer = [&](const char* flag, long long min, long long max, auto& out) -> std::string {
    if (auto v = a.value(flag)) {
      auto n = parse_int(*v, min, max);
      if (!n) return bad(flag, *v, strprintf("an integer in [%lld, %lld]", min, max).c_str());
      out = static_cast<std::remove_reference_t<decltype(out)>>(*n);
    }
    return {};
  };
  cfg.scenario = a.value("--scenario").value_or("");
  cfg.url_text = strip_slash(a.value("--url").value_or("http://localhost:8000"));
  cfg.endpoint = a.value("--endpoint").value_or(cfg.endpoint);
  cfg.endpoint_type = a.value("--endpoint-type").value_or(cfg.endpoint_type);
  cfg.streaming = a.has("--streaming");
  cfg.model = a.value("--model").value_or("");
  cfg.tokenizer = a.value("--tokenizer").value_or(cfg.model);
  cfg.use_server_token_count = a.has("--use-server-token-count");
  cfg.extra_inputs = a.values("--extra-inputs");
  cfg.dynamo_conv_aware_routing = a.has("--use-dynamo-conv-aware-routing");
  cfg.no_gpu_telemetry = a.has("--no-gpu-telemetry");
  cfg.tokenizer_trust_remote_code = a.has("--tokenizer-trust-remote-code");
  cfg.output_dir = a.value("--output-artifact-dir").value_or(cfg.output_dir);
  cfg.unsafe_override = a.has("--unsafe-override");
  cfg.loader = a.value("--public-dataset").value_or("");
  int max_context = 0;
  for (std::string e : {number("--benchmark-duration", 0, 1e9, cfg.duration_s),
                        number("--stats-interval", 0, 1e9, cfg.stats_interval_s),
                        number("--failed-request-threshold", 0, 1, cfg.failed_request_threshold),
                        number("--trajectory-start-min-ratio", 0, 1, cfg.start_min_ratio),
                        number("--trajectory-start-max-ratio", 0, 1, cfg.start_max_ratio),
                        number("--trace-idle-gap-cap-seconds", 0, 1e9, cfg.trace_idle_gap_cap_s),
                        number("--warmup-grace-period", 0, 1e9, cfg.warmup_grace_period_s),
                        number("--dynamo-session-timeout-seconds", 0, 1e9, cfg.dynamo_session_timeout_s),
                        number("--slice-duration", 0, 1e6, cfg.slice_duration_s),
                        integer("--concurrency", 1, 100000, cfg.concurrency),
                        integer("--random-seed", 0, (1LL << 62), cfg.random_seed),
                        integer("--warmup-requests-per-lane", 0, 1000000, cfg.warmup_requests_per_lane),
                        integer("--num-dataset-entries", 1, 100000000, cfg.num_dataset_entries),
                        integer("--max-context-length", 1, 1LL << 30, max_context)}) {
    if (!e.empty()) return e;
  }
  if (a.has("--max-context-length")) cfg.max_context_length = max_context;
  for (const std::string& url : a.values("--server-metrics")) {
    if (!parse_http_url(url).ok()) return bad("--server-metrics", url, "an http://host:port/path URL");
    cfg.metrics_urls.push_back(strip_slash(url));
  }
  return {};
}

// The scenario's rules and the values the fake needs; returns an error or "".
std::string check(Config& cfg) {
  if (cfg.scenario.empty()) return strprintf("--scenario is required (the fake runs only '%s')", kScenario);
  if (cfg.scenario != kScenario) {
    return strprintf("unknown --scenario '%s' (the fake runs only '%s')", cfg.scenario.c_str(), kScenario);
  }
  if (cfg.model.empty()) return "--model is required";
  cfg.url = parse_http_url(cfg.url_text);
  if (!cfg.url.ok()) return "invalid value '" + cfg.url_text + "' for --url: " + cfg.url.error;
  if (cfg.endpoint_type != "chat") return "--endpoint-type '" + cfg.endpoint_type + "': the fake speaks only 'chat'";
  if (cfg.endpoint.empty() || cfg.endpoint[0] != '/') return "--endpoint '" + cfg.endpoint + "' must start with '/'";
  if (!cfg.streaming) return strprintf("scenario %s requires --streaming", kScenario);
  if (cfg.duration_s <= 0) return "--benchmark-duration must be positive";
  if (cfg.duration_s < kMinDurationS && !cfg.unsafe_override) {
    return strprintf("scenario %s requires --benchmark-duration >= %g s (got %g); pass --unsafe-override for a "
                     "shorter, submission-invalid run",
                     kScenario, kMinDurationS, cfg.duration_s);
  }
  if (cfg.start_min_ratio > cfg.start_max_ratio) {
    return "--trajectory-start-min-ratio must not exceed --trajectory-start-max-ratio";
  }
  if (cfg.slice_duration_s <= 0) return "--slice-duration must be positive";
  if (cfg.loader.empty()) return "--public-dataset is required (the fake has no other trace source)";
  cfg.hf_dataset = hf_dataset_of(cfg.loader);
  if (cfg.hf_dataset.empty()) {
    return "unknown --public-dataset '" + cfg.loader + "' (scenario " + kScenario +
           " allows the semianalysis_cc_traces_weka_* loaders)";
  }
  const std::string own = cfg.url_text + "/metrics";
  bool seen = false;
  for (const std::string& u : cfg.metrics_urls) seen = seen || u == own;
  if (!seen) cfg.metrics_urls.push_back(own);
  std::vector<std::string> unique;
  for (const std::string& u : cfg.metrics_urls) {
    bool dup = false;
    for (const std::string& v : unique) dup = dup || u == v;
    if (!dup) unique.push_back(u);
  }
  cfg.metrics_urls = std::move(unique);
  return {};
}

}  // namespace

std::string hf_dataset_of(const std::string& loader) {
  static const std::pair<const char*, const char*> kLoaders[] = {
      {"semianalysis_cc_traces_weka_with_subagents", "cc-traces-weka-061526"},
      {"semianalysis_cc_traces_weka_with_subagents_256k", "cc-traces-weka-061526-256k"},
      {"semianalysis_cc_traces_weka_with_subagents_060226", "cc-traces-weka-with-subagents-060226"},
      {"semianalysis_cc_traces_weka_with_subagents_060226_256k", "cc-traces-weka-with-subagents-060226-256k"},
      {"semianalysis_cc_traces_weka_with_subagents_060526", "cc-traces-weka-with-subagents-060526"},
      {"semianalysis_cc_traces_weka_with_subagents_060526_256k", "cc-traces-weka-with-subagents-060526-256k"},
      {"semianalysis_cc_traces_weka_with_subagents_060826", "cc-traces-weka-with-subagents-060826"},
      {"semianalysis_cc_traces_weka_with_subagents_060826_256k", "cc-traces-weka-with-subagents-060826-256k"},
      {"semianalysis_cc_traces_weka_061326", "cc-traces-weka-061326"},
      {"semianalysis_cc_traces_weka_061326_256k", "cc-traces-weka-061326-256k"},
      {"semianalysis_cc_traces_weka_061526", "cc-traces-weka-061526"},
      {"semianalysis_cc_traces_weka_061526_256k", "cc-traces-weka-061526-256k"},
      {"semianalysis_cc_traces_weka_062126", "cc-traces-weka-062126"},
      {"semianalysis_cc_traces_weka_062126_256k", "cc-traces-weka-062126-256k"},
  };
  for (const auto& [name, dataset] : kLoaders) {
    if (loader == name) return std::string("semianalysisai/") + dataset;
  }
  return {};
}

std::optional<Config> parse_profile(const std::vector<std::string>& args, bool session_header_env,
                                    std::string& error) {
  if (args.empty()) {
    error = "missing command: the fake supports only 'aiperf profile'";
    return std::nullopt;
  }
  if (args[0] != "profile") {
    error = "unknown command '" + args[0] + "': the fake supports only 'aiperf profile'";
    return std::nullopt;
  }
  StrictArgs a = parse_strict(std::vector<std::string>(args.begin() + 1, args.end()), specs());
  if (!a.ok()) {
    error = a.error.rfind("error: ", 0) == 0 ? a.error.substr(7) : a.error;
    return std::nullopt;
  }
  Config cfg;
  cfg.session_header_from_correlation_id = session_header_env;
  if (error = read_flags(a, cfg); !error.empty()) return std::nullopt;
  if (error = check(cfg); !error.empty()) return std::nullopt;
  return cfg;
}

}  // namespace ixfake::aiperf
