#include "submitter/results/agentic_result.h"

#include <gtest/gtest.h>

#include "submitter/results/agentic_test_support.h"

namespace ix {
namespace {

using test::AgenticCaseEnv;
using test::AgenticExpected;

EntryRunInfo RunInfo() {
  EntryRunInfo r;
  r.sweep_id = "sw-1";
  r.entry = 3;
  r.config_key = "dsv4-fp4-b300-vllm-agentic";
  r.arm = "dep4";
  r.slurm_job_id = "77";
  r.slurm_task = "3";
  r.node = "b300-01";
  return r;
}

// `text` without the "ix" key this project appends last.
std::string WithoutIx(const std::string& text) {
  const size_t p = text.rfind(",\n  \"ix\": {");
  return p == std::string::npos ? text : text.substr(0, p) + "\n}";
}

// Runs the task's step on a copy of `name` and compares every file
// InferenceX's Python wrote, byte for byte.
AgenticOutcome RunCase(const std::string& name, const test::TempDir& dir, EnvVars env = {}) {
  test::UseUtc();
  test::CopyAgenticCase(name, dir.path());
  if (env.empty()) env = AgenticCaseEnv(name);
  const std::string file = EnvValue(env, "RESULT_FILENAME") + ".json";
  const int gpus = std::stoi(EnvValue(env, "TP")) * std::stoi(EnvValue(env, "PP_SIZE")) * std::stoi(EnvValue(env, "PCP_SIZE"));
  Result<AgenticOutcome> out = WriteAgenticResult(dir.path(), env, RunInfo(), gpus);
  EXPECT_TRUE(out) << (out ? "" : out.error().message);
  if (!out) return {};
  EXPECT_EQ(out.value().result_path, dir.path() + "/" + file);
  int err = 0;
  const std::string written = ReadFileText(out.value().result_path, &err);
  EXPECT_EQ(WithoutIx(written), AgenticExpected(name, file, dir.path()));
  EXPECT_EQ(ReadFileText(dir.path() + "/power_validation.json", &err), AgenticExpected(name, "power_validation.json", dir.path()));
  return out.value();
}

TEST(AgenticResult, MatchesInferenceXsFixture) {
  test::TempDir dir("agentic-spec47");
  // The fixture's request_count is a bare number, which validate_agentic_result refuses.
  EXPECT_EQ(RunCase("spec47", dir).failure, "failed to read " + dir.path() +
                                                "/aiperf_artifacts/profile_export_aiperf.json: request_count must be an object");
}

TEST(AgenticResult, DropsWarmupAndErroredRecordsAsInferenceXDoes) {
  test::TempDir dir("agentic-warmup");
  EXPECT_EQ(RunCase("warmup_errors", dir).failure,
            "aiperf request error rate exceeded the benchmark limit: 4/19 = 21.053% > 10.000%");
}

TEST(AgenticResult, ReadsVllmServerMetricsOfADepArm) {
  test::TempDir dir("agentic-dep");
  const AgenticOutcome out = RunCase("vllm_dep", dir);
  EXPECT_EQ(out.failure, "");
  int err = 0;
  rapidjson::Document d;
  d.Parse(ReadFileText(out.result_path, &err).c_str());
  const rapidjson::Value& ix = d["ix"];
  EXPECT_STREQ(ix["arm"].GetString(), "dep4");
  ASSERT_EQ(ix["dp_ranks"].Size(), 4u);
  const rapidjson::Value& r1 = ix["dp_ranks"][1];
  EXPECT_EQ(r1["rank"].GetInt64(), 1);
  EXPECT_EQ(r1["requests"].GetInt64(), 7);
  EXPECT_EQ(ix["dp_ranks"][0]["requests"].GetInt64(), 7);  // length + stop
  EXPECT_EQ(r1["sessions"].GetInt64(), 3);                 // sess-1, sess-3, sess-5 (the errored record is not kept)
  EXPECT_DOUBLE_EQ(r1["prefix_cache_hit_rate"].GetDouble(), 0.33328);
}

TEST(AgenticResult, AddsPowerOverAiperfsProfilingWindow) {
  test::TempDir dir("agentic-power");
  EXPECT_EQ(RunCase("power", dir).failure, "");
  int err = 0;
  EXPECT_EQ(ReadFileText(dir.path() + "/agentic_power_window.json", &err),
            AgenticExpected("power", "agentic_power_window.json", dir.path()));
}

TEST(AgenticResult, GatesOnTheRequiredServerMetricPrefix) {
  test::TempDir dir("agentic-prefix");
  EnvVars env = AgenticCaseEnv("vllm_dep");
  env.emplace_back("AIPERF_REQUIRED_SERVER_METRIC_PREFIX", "sglang:");
  EXPECT_EQ(RunCase("vllm_dep", dir, env).failure,
            dir.path() + "/aiperf_artifacts/server_metrics_export.json contains no metric with required prefix 'sglang:'");
}

TEST(AgenticResult, SaysWhenTheClientWroteNoArtifacts) {
  test::TempDir dir("agentic-none");
  const Result<AgenticOutcome> out = WriteAgenticResult(dir.path(), AgenticCaseEnv("spec47"), RunInfo(), 4);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message,
            "the client wrote no AIPerf artifacts: " + dir.path() + "/aiperf_artifacts/profile_export.jsonl not found");
}

// Python's messages, as process_agentic_result printed them for each environment.
TEST(AgenticResult, RefusesTheEnvironmentWithPythonsMessages) {
  const std::pair<std::vector<std::pair<std::string, std::string>>, std::string> cases[] = {
      {{{"KV_OFFLOADING", ""}}, "Missing required environment variable: KV_OFFLOADING"},
      {{{"KV_OFFLOAD_BACKEND", "x"}}, "KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none"},
      {{{"KV_OFFLOADING", "cpu"}}, "KV_OFFLOAD_BACKEND is required when KV_OFFLOADING is enabled"},
      {{{"KV_OFFLOADING", "cpu"}, {"KV_OFFLOAD_BACKEND", "a"}, {"KV_OFFLOAD_BACKEND_METADATA", R"({"name":"b"})"}},
       "KV_OFFLOAD_BACKEND must match KV_OFFLOAD_BACKEND_METADATA.name"},
      {{{"KV_OFFLOADING", "cpu"}, {"KV_OFFLOAD_BACKEND", "a"}, {"KV_OFFLOAD_BACKEND_METADATA", R"({"name":"a","x":1})"}},
       "KV_OFFLOAD_BACKEND_METADATA may contain only 'name' and 'version'"},
      {{{"ROUTER_METADATA", R"({"name":"r"})"}}, "ROUTER_METADATA must contain exactly 'name' and 'version'"},
      {{{"ROUTER_METADATA", "["}}, "ROUTER_METADATA must contain valid JSON"},
      {{{"PP_SIZE", "0"}}, "PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers."},
      {{{"TP", "x"}}, "invalid literal for int() with base 10: 'x'"},
  };
  for (const auto& [overrides, message] : cases) {
    test::TempDir dir("agentic-env");
    test::CopyAgenticCase("spec47", dir.path());
    EnvVars env = AgenticCaseEnv("spec47");
    for (const auto& [k, v] : overrides) {
      for (auto& kv : env) {
        if (kv.first == k) kv.second = v;
      }
      if (EnvValue(env, k) != v) env.emplace_back(k, v);
    }
    const Result<AgenticOutcome> out = WriteAgenticResult(dir.path(), env, RunInfo(), 4);
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(out.value().failure, message);
    EXPECT_EQ(out.value().result_path, "");
  }
}

}  // namespace
}  // namespace ix
