#include "vllm_metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ixfake::vllm {
namespace {

TEST(VllmMetrics, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);
  EXPECT_EQ(h.counts, (std::vector<unsigned long long>{1, 2}));
  EXPECT_EQ(h.count, 3u);
  EXPECT_DOUBLE_EQ(h.sum, 5.55);
}

TEST(VllmMetrics, RendersPerRankFamilies) {
  std::map<int, RankStats> stats;
  stats[0].running = 1;
  stats[1].success_stop = 2;
  stats[1].e2e.observe(0.02);
  const std::string text = render_metrics(stats, "my\"model", 0, 4096);
  EXPECT_NE(text.find("# TYPE vllm:num_requests_running gauge\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:num_requests_running{engine=\"0\",model_name=\"my\\\"model\"} 1.0\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:request_success_total{engine=\"1\",model_name=\"my\\\"model\",finished_reason=\"stop\"} 2.0"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:e2e_request_latency_seconds_bucket{engine=\"1\",model_name=\"my\\\"model\",le=\"0.025\"} 1.0"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:cache_config_info{engine=\"0\",max_model_len=\"4096\",block_size=\"16\",num_gpu_blocks=\"20480\","
                      "num_cpu_blocks=\"None\",enable_prefix_caching=\"True\"} 1.0\n"),
            std::string::npos);
}

TEST(VllmMetrics, TokensCountAsGeneratedAndThePromptWithTheFirst) {
  RankStats s;
  const PromptTokens prompt{100, 64, 16};
  count_generated(s, prompt, 0, 0);  // a role chunk carries no token: no prefill yet
  EXPECT_EQ(s.prompt_tokens, 0u);
  count_generated(s, prompt, 0, 3);
  EXPECT_EQ(s.prompt_tokens, 100u);
  EXPECT_EQ(s.generation_tokens, 3u);
  count_generated(s, prompt, 3, 2);
  EXPECT_EQ(s.prompt_tokens, 100u);  // once per request
  EXPECT_EQ(s.generation_tokens, 5u);
  EXPECT_EQ(s.prompt_local_hit, 64u);
  EXPECT_EQ(s.prompt_external, 16u);
  EXPECT_EQ(s.prompt_local_compute, 20u);
  EXPECT_EQ(s.prompt_local_hit + s.prompt_external + s.prompt_local_compute, s.prompt_tokens);
}

}  // namespace
}  // namespace ixfake::vllm
