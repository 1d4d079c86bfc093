#include "submitter/results/benchmark_env.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

PlannedEntry Dep4Entry() {
  PlannedEntry e;
  e.index = 7;
  e.config_key = "dsv41flash-fp4-b300-vllm";
  e.arm = "dep4";
  e.router_version = "0.1.14";
  e.entry_json = R"({"image":"vllm/vllm-openai:nightly","model":"deepseek-ai/DeepSeek-V4.1-Flash",)"
                 R"("model-prefix":"dsv41flash","precision":"fp4","framework":"vllm","runner":"b300","isl":1024,)"
                 R"("osl":1024,"tp":4,"pp":1,"dcp-size":1,"pcp-size":1,"conc":64,"max-model-len":2304,"ep":4,)"
                 R"("dp-attn":true,"spec-decoding":"none","exp-name":"dsv41flash_1k1k","disagg":false,"run-eval":false})";
  return e;
}

TEST(BenchmarkEnvironment, NamesTheRunAsInferenceXsWorkflowDoes) {
  Result<EnvVars> env = BenchmarkEnvironment(Dep4Entry(), "node1");
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(EnvValue(env.value(), "RESULT_FILENAME"),
            "dsv41flash_1k1k_fp4_vllm_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_node1");
  EXPECT_EQ(EnvValue(env.value(), "RUNNER_TYPE"), "b300");
  EXPECT_EQ(EnvValue(env.value(), "DP_ATTENTION"), "true");
  EXPECT_EQ(EnvValue(env.value(), "MAX_MODEL_LEN"), "2304");
  EXPECT_EQ(EnvValue(env.value(), "IS_MULTINODE"), "false");
  EXPECT_EQ(EnvValue(env.value(), "GPU_COUNT"), "4");
  EXPECT_EQ(EnvValue(env.value(), "ROUTER_METADATA"), R"({"name":"vllm-router","version":"0.1.14"})");
  EXPECT_TRUE(HasAggResult(env.value()));
}

TEST(BenchmarkEnvironment, AStepAcrossNodesIsMultinode) {
  PlannedEntry e = Dep4Entry();
  e.nodes = 2;
  Result<EnvVars> env = BenchmarkEnvironment(e, "node1");
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(EnvValue(env.value(), "IS_MULTINODE"), "true");
}

TEST(BenchmarkEnvironment, AddsTheRecipeFingerprintAndOmitsTheRouterWithoutOne) {
  PlannedEntry e = Dep4Entry();
  e.router_version.clear();
  e.entry_json.insert(1, R"("recipe-fingerprint":"0123456789abcdef0123",)");
  Result<EnvVars> env = BenchmarkEnvironment(e, "n");
  ASSERT_TRUE(env) << env.error().message;
  const std::string name = EnvValue(env.value(), "RESULT_FILENAME");
  EXPECT_EQ(name.substr(name.size() - 33), "_conc64_n_recipe-0123456789abcdef");
  for (const auto& [k, v] : env.value()) EXPECT_NE(k, "ROUTER_METADATA");
}

TEST(BenchmarkEnvironment, NamesTheMissingFields) {
  PlannedEntry e = Dep4Entry();
  e.entry_json = R"({"image":"x","tp":4})";
  Result<EnvVars> env = BenchmarkEnvironment(e, "n");
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().message.find("runner"), std::string::npos) << env.error().message;
  EXPECT_NE(env.error().message.find("exp-name"), std::string::npos);
}

TEST(EnvFileText, QuotesSoAShellReadsTheExactValue) {
  EXPECT_EQ(EnvFileText({{"A", "it's $x"}, {"B", R"({"n":1})"}}), "A='it'\\''s $x'\nB='{\"n\":1}'\n");
}

}  // namespace
}  // namespace ix
