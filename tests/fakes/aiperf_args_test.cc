// Unit tests of the fake aiperf's command line (aiperf_args.h).
#include "aiperf_args.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ixfake::aiperf {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// build_replay_cmd's line for dsv4 TP8 c1 (the agentic spec, section 1.3),
// without argv[0].
const char* const kInferenceXLine =
    "profile --scenario inferencex-agentx-mvp --url http://localhost:8888 --endpoint /v1/chat/completions "
    "--endpoint-type chat --streaming --model deepseek-ai/DeepSeek-V4-Pro --tokenizer deepseek-ai/DeepSeek-V4-Pro "
    "--concurrency 1 --benchmark-duration 3600 --stats-interval 30 --random-seed 42 --failed-request-threshold 0.10 "
    "--trajectory-start-min-ratio 0.25 --trajectory-start-max-ratio 0.75 --warmup-requests-per-lane 10 "
    "--trace-idle-gap-cap-seconds 300 --warmup-grace-period 1800 --use-server-token-count --no-gpu-telemetry "
    "--tokenizer-trust-remote-code --num-dataset-entries 393 --slice-duration 1.0 --server-metrics "
    "http://localhost:8888/metrics --output-artifact-dir /workspace/results/aiperf_artifacts --public-dataset "
    "semianalysis_cc_traces_weka_062126";

std::optional<Config> parse(const std::string& line, std::string& error, bool env = false) {
  return parse_profile(words(line), env, error);
}

TEST(AiperfArgs, AcceptsInferenceXLine) {
  std::string error;
  auto cfg = parse(kInferenceXLine, error, true);
  ASSERT_TRUE(cfg) << error;
  EXPECT_EQ(cfg->url.host, "localhost");
  EXPECT_EQ(cfg->url.port, 8888);
  EXPECT_EQ(cfg->model, "deepseek-ai/DeepSeek-V4-Pro");
  EXPECT_EQ(cfg->concurrency, 1);
  EXPECT_DOUBLE_EQ(cfg->duration_s, 3600);
  EXPECT_EQ(cfg->random_seed, 42u);
  EXPECT_DOUBLE_EQ(cfg->failed_request_threshold, 0.10);
  EXPECT_EQ(cfg->warmup_requests_per_lane, 10);
  EXPECT_DOUBLE_EQ(cfg->trace_idle_gap_cap_s, 300);
  EXPECT_TRUE(cfg->use_server_token_count);
  EXPECT_EQ(cfg->num_dataset_entries, 393);
  EXPECT_EQ(cfg->hf_dataset, "semianalysisai/cc-traces-weka-062126");
  EXPECT_EQ(cfg->output_dir, "/workspace/results/aiperf_artifacts");
  EXPECT_TRUE(cfg->session_header_from_correlation_id);
  // The given URL is <url>/metrics itself: scraped once.
  EXPECT_EQ(cfg->metrics_urls, std::vector<std::string>{"http://localhost:8888/metrics"});
}

TEST(AiperfArgs, ServerMetricsTakesSeveralUrlsAndAddsOwn) {
  std::string line = kInferenceXLine;
  line.replace(line.find("http://localhost:8888/metrics"), 29,
               "http://localhost:8889/metrics http://10.0.0.2:8000/metrics/");
  std::string error;
  auto cfg = parse(line + " --unsafe-override --extra-inputs temperature:0.6 top_p:1 --max-context-length 4096",
                   error);
  ASSERT_TRUE(cfg) << error;
  EXPECT_EQ(cfg->metrics_urls, (std::vector<std::string>{"http://localhost:8889/metrics",
                                                         "http://10.0.0.2:8000/metrics",
                                                         "http://localhost:8888/metrics"}));
  EXPECT_EQ(cfg->extra_inputs, (std::vector<std::string>{"temperature:0.6", "top_p:1"}));
  EXPECT_EQ(cfg->max_context_length, 4096);
  EXPECT_TRUE(cfg->unsafe_override);
}

TEST(AiperfArgs, RefusesDrift) {
  const std::string base = kInferenceXLine;
  struct Case {
    std::string line;
    std::string names;
  };
  const std::vector<Case> cases = {
      {base + " --request-rate 5", "--request-rate"},
      {base + " --public-dataset", "--public-dataset"},
      {"analyze-trace --scenario inferencex-agentx-mvp", "analyze-trace"},
      {"", "profile"},
      {base.substr(0, base.find(" --server-metrics")) + " --server-metrics --output-artifact-dir x", "--server-metrics"},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_FALSE(parse(c.line, error)) << c.line;
    EXPECT_NE(error.find(c.names), std::string::npos) << error;
  }
}

TEST(AiperfArgs, ScenarioRules) {
  const std::string base = kInferenceXLine;
  std::string error;
  std::string short_run = base;
  short_run.replace(short_run.find("3600"), 4, "20");
  EXPECT_FALSE(parse(short_run, error));
  EXPECT_NE(error.find("--unsafe-override"), std::string::npos) << error;
  EXPECT_TRUE(parse(short_run + " --unsafe-override", error)) << error;

  std::string other = base;
  other.replace(other.find("inferencex-agentx-mvp"), 21, "default");
  EXPECT_FALSE(parse(other, error));
  EXPECT_NE(error.find("--scenario"), std::string::npos);

  std::string loader = base;
  loader.replace(loader.find("semianalysis_cc_traces_weka_062126"), 34, "weka_trace");
  EXPECT_FALSE(parse(loader, error));
  EXPECT_NE(error.find("weka_trace"), std::string::npos);

  std::string threshold = base;
  threshold.replace(threshold.find("0.10"), 4, "1.5");
  EXPECT_FALSE(parse(threshold, error));
  EXPECT_NE(error.find("--failed-request-threshold"), std::string::npos);
}

TEST(AiperfArgs, KnowsEveryLoader) {
  EXPECT_EQ(hf_dataset_of("semianalysis_cc_traces_weka_with_subagents"), "semianalysisai/cc-traces-weka-061526");
  EXPECT_EQ(hf_dataset_of("semianalysis_cc_traces_weka_with_subagents_060826_256k"),
            "semianalysisai/cc-traces-weka-with-subagents-060826-256k");
  EXPECT_EQ(hf_dataset_of("semianalysis_cc_traces_weka_061326"), "semianalysisai/cc-traces-weka-061326");
  EXPECT_EQ(hf_dataset_of("weka_hf"), "");
}

}  // namespace
}  // namespace ixfake::aiperf
