#include "submitter/results/benchmark_env.h"

#include <gtest/gtest.h>

#include "submitter/results/results_test_entries.h"
#include "tests/support/test.h"

namespace ix {
namespace {

PlannedEntry Dep4Entry() {
  return PlannedEntry{
      .index = 7, .config_key = "dsv41flash-fp4-b300-vllm", .arm = "dep4", .router_version = "0.1.14",
      .entry_json = R"({"image":"vllm/vllm-openai:nightly","model":"deepseek-ai/DeepSeek-V4.1-Flash",)"
                    R"("model-prefix":"dsv41flash","precision":"fp4","framework":"vllm","runner":"b300","isl":1024,)"
                    R"("osl":1024,"tp":4,"pp":1,"dcp-size":1,"pcp-size":1,"conc":64,"max-model-len":2304,"ep":4,)"
                    R"("dp-attn":true,"spec-decoding":"none","exp-name":"dsv41flash_1k1k","disagg":false,)"
                    R"("run-eval":false})"};
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

PlannedEntry Dep16Entry() { return test::Dep16MultinodeEntry(); }

// Each variable of `expected` is in `env` with its value (present, even
// when the value is "").
void ExpectVariables(const EnvVars& env, const std::vector<std::pair<std::string, std::string>>& expected) {
  for (const auto& [k, v] : expected) {
    bool found = false;
    for (const auto& [n, x] : env) found = found || (n == k && x == v);
    EXPECT_TRUE(found) << k << " should be '" << v << "', is '" << EnvValue(env, k) << "'";
  }
}

TEST(BenchmarkEnvironment, AStepAcrossNodesGetsTheMultinodeWorkflowsVariables) {
  Result<EnvVars> env = BenchmarkEnvironment(Dep16Entry(), "head");
  ASSERT_TRUE(env) << env.error().message;
  ExpectVariables(env.value(), {
      {"PREFILL_NUM_WORKERS", "1"}, {"PREFILL_TP", "16"},   {"PREFILL_PP_SIZE", "1"}, {"PREFILL_DCP_SIZE", "1"},
      {"PREFILL_PCP_SIZE", "1"},    {"PREFILL_EP", "16"},   {"PREFILL_DP_ATTN", "true"},
      {"DECODE_NUM_WORKERS", "0"},  {"DECODE_TP", "16"},    {"DECODE_PP_SIZE", "1"},  {"DECODE_DCP_SIZE", "1"},
      {"DECODE_PCP_SIZE", "1"},     {"DECODE_EP", "16"},    {"DECODE_DP_ATTN", "true"},
      {"PREFILL_GPUS", "16"},       {"DECODE_GPUS", "0"},   {"PREFILL_HARDWARE", ""}, {"DECODE_HARDWARE", ""},
      {"CONC", "64"},               {"IS_MULTINODE", "true"}, {"DISAGG", "false"}});
  // The workflow's RESULT_FILENAME_BASE (both shapes, the row's conc list,
  // the runner) + what the srt-slurm launcher appends for concurrency 64.
  EXPECT_EQ(EnvValue(env.value(), "RESULT_FILENAME"),
            "mn_1k1k_fp4_vllm_prefill-tp16-pp1-dcp1-pcp1-ep16-dptrue-nw1_decode-tp16-pp1-dcp1-pcp1-ep16-dptrue-nw0"
            "_disagg-false_spec-none_conc32x64_head_sa-bench_isl_1024_osl_1024_conc64_gpus_16");
  for (const char* single : {"TP", "EP_SIZE", "DP_ATTENTION", "PP_SIZE", "GPU_COUNT"}) {
    for (const auto& [n, x] : env.value()) EXPECT_NE(n, single) << "the multinode workflow does not set it";
  }
  EXPECT_TRUE(HasAggResult(env.value()));
}

TEST(BenchmarkEnvironment, AMultinodeNamePutsTheFingerprintBeforeTheLaunchersSuffix) {
  PlannedEntry e = Dep16Entry();
  e.conc = 32;
  e.gpus = 4;
  e.nodes = 4;
  e.entry_json.insert(1, R"("recipe-fingerprint":"0123456789abcdef0123",)");
  const std::string dpa = R"("dp-attn":true,)", hw = R"("dp-attn":true,"hardware":"gb200",)";
  for (size_t p = e.entry_json.find(dpa); p != std::string::npos; p = e.entry_json.find(dpa, p + hw.size())) {
    e.entry_json.replace(p, dpa.size(), hw);
  }
  Result<EnvVars> env = BenchmarkEnvironment(e, "n1");
  ASSERT_TRUE(env) << env.error().message;
  const std::string name = EnvValue(env.value(), "RESULT_FILENAME");
  EXPECT_NE(name.find("_conc32x64_n1_recipe-0123456789abcdef_sa-bench_isl_1024_osl_1024_conc32_gpus_16"),
            std::string::npos)
      << name;
  EXPECT_EQ(EnvValue(env.value(), "PREFILL_HARDWARE"), "gb200");
  EXPECT_EQ(EnvValue(env.value(), "DECODE_HARDWARE"), "gb200");
}

TEST(BenchmarkEnvironment, AMultinodeEntryNamesWhatItLacks) {
  PlannedEntry e = Dep16Entry();
  const std::string decode_count = R"("num-worker":0,"tp":16,)";
  e.entry_json.erase(e.entry_json.find(decode_count), decode_count.size());
  Result<EnvVars> env = BenchmarkEnvironment(e, "n");
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().message.find("decode.num-worker, decode.tp"), std::string::npos) << env.error().message;
  e = Dep16Entry();
  const std::string aggregated = R"("disagg":false)";
  e.entry_json.replace(e.entry_json.find(aggregated), aggregated.size(), R"("disagg":true)");
  env = BenchmarkEnvironment(e, "n");
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().message.find("disaggregated"), std::string::npos) << env.error().message;
  e = Dep16Entry();
  e.gpus = 0;
  env = BenchmarkEnvironment(e, "n");
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().message.find("GPUs"), std::string::npos) << env.error().message;
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

// InferenceX's own agentic DEP4 row with DRAM offload (the fixture
// agentic-dsv4-fp4-b300-vllm-agentic-mtp.json, as `ixsubmit matrix` prints it).
PlannedEntry AgenticDep4Entry() {
  PlannedEntry e = Dep4Entry();
  e.conc = 48;
  e.entry_json =
      R"({"image":"vllm/vllm-openai:nightly-dev-x86_64-cu13.0.1-426e59f","model":"deepseek-ai/DeepSeek-V4-Pro",)"
      R"("model-prefix":"dsv4","precision":"fp4","framework":"vllm","runner":"cluster:b300-nv","tp":4,"pp":1,)"
      R"("dcp-size":1,"pcp-size":1,"ep":4,"dp-attn":true,"spec-decoding":"mtp","conc":48,"kv-offloading":"dram",)"
      R"("total-cpu-dram-gb":1424,"duration":3600,"exp-name":"dsv4_tp4_conc48_kvdram-vllm-simple_spec-mtp",)"
      R"("scenario-type":"agentic-coding","kv-offload-backend":{"name":"vllm-simple"},)"
      R"("router":{"name":"vllm-router","version":"0.1.14"},"run-eval":false})";
  return e;
}

TEST(BenchmarkEnvironment, AnAgenticEntryGetsTheAgenticWorkflowsVariables) {
  Result<EnvVars> env = BenchmarkEnvironment(AgenticDep4Entry(), "b300-nv_03", ContractOptions{"/r/7", 0});
  ASSERT_TRUE(env) << env.error().message;
  // KV_OFFLOAD_BACKEND_METADATA: as GitHub's toJson writes it.
  ExpectVariables(env.value(), {
      {"SCENARIO_TYPE", "agentic-coding"}, {"KV_OFFLOADING", "dram"}, {"KV_OFFLOAD_BACKEND", "vllm-simple"},
      {"KV_OFFLOAD_BACKEND_METADATA", "{\n  \"name\": \"vllm-simple\"\n}"}, {"TOTAL_CPU_DRAM_GB", "1424"},
      {"DURATION", "3600"}, {"AIPERF_FAILED_REQUEST_THRESHOLD", "0.10"},
      {"AIPERF_LIVE_FAILED_REQUEST_THRESHOLD", "0.10"}, {"AIPERF_TRACE_IDLE_GAP_CAP_SECONDS", "300"},
      {"RESULT_DIR", "/r/7"}, {"AGENTIC_OUTPUT_DIR", "/r/7"},
      {"RESULT_FILENAME", "dsv4_tp4_conc48_kvdram-vllm-simple_spec-mtp_fp4_vllm_tp4-pp1-dcp1-pcp1-ep4-dpatrue_"
                          "disagg-false_spec-mtp_conc48_b300-nv_03"},
      {"ROUTER_METADATA", R"({"name":"vllm-router","version":"0.1.14"})"}});
  EXPECT_EQ(EnvValue(env.value(), "ISL"), "") << "agentic rows have no sequence lengths";
  EXPECT_FALSE(HasAggResult(env.value())) << "process_result.py is not run for agentic entries";
  env = BenchmarkEnvironment(AgenticDep4Entry(), "n", ContractOptions{"", 20});
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(EnvValue(env.value(), "DURATION"), "20") << "the sweep's --duration";
  EXPECT_EQ(EnvValue(env.value(), "RESULT_DIR"), "");
}

TEST(BenchmarkEnvironment, AnAgenticEntryWithoutOffloadHasAnEmptyBackend) {
  PlannedEntry e = AgenticDep4Entry();
  e.entry_json = test::ReplaceOnce(e.entry_json, R"("kv-offloading":"dram")", R"("kv-offloading":"none")");
  e.entry_json = test::ReplaceOnce(e.entry_json, R"("kv-offload-backend":{"name":"vllm-simple"},)", "");
  Result<EnvVars> env = BenchmarkEnvironment(e, "n");
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(EnvValue(env.value(), "KV_OFFLOAD_BACKEND"), "");
  EXPECT_EQ(EnvValue(env.value(), "KV_OFFLOAD_BACKEND_METADATA"), "");
  e.entry_json = test::ReplaceOnce(e.entry_json, R"("kv-offloading":"none",)", "");
  env = BenchmarkEnvironment(e, "n");
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().message.find("kv-offloading"), std::string::npos) << env.error().message;
}

TEST(EnvFileText, QuotesSoAShellReadsTheExactValue) {
  EXPECT_EQ(EnvFileText({{"A", "it's $x"}, {"B", R"({"n":1})"}}), "A='it'\\''s $x'\nB='{\"n\":1}'\n");
}

}  // namespace
}  // namespace ix
