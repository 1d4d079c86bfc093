#include "submitter/results/process_result.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "submitter/results/python_json.h"

namespace ix {
namespace {

std::map<std::string, std::string> Env() {
  return {{"RUNNER_TYPE", "b300"}, {"FRAMEWORK", "vllm"},   {"PRECISION", "fp4"},     {"SPEC_DECODING", "none"},
          {"RESULT_FILENAME", "r"}, {"ISL", "1024"},        {"OSL", "1024"},          {"DISAGG", "false"},
          {"MODEL_PREFIX", "dsv"},  {"IMAGE", "vllm:x"},    {"TP", "4"},              {"EP_SIZE", "4"},
          {"DP_ATTENTION", "true"}, {"ROUTER_METADATA", R"({"name":"vllm-router","version":"0.1.14"})"}};
}

EnvLookup Lookup(const std::map<std::string, std::string>& m) {
  return [m](const std::string& n) -> std::optional<std::string> {
    auto it = m.find(n);
    return it == m.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

const char kBench[] =
    R"({"model_id":"m","max_concurrency":64,"total_token_throughput":8000.0,"output_throughput":2000.0,)"
    R"("mean_ttft_ms":250.0,"median_tpot_ms":20.0,"p99_e2el_ms":5000.0})";

// kBench parsed: what benchmark_serving.py wrote.
rapidjson::Document Bench() {
  rapidjson::Document bench;
  bench.Parse(kBench);
  return bench;
}

// The aggregate of kBench under `env` as json.dumps prints it; "error: ..."
// when it is refused (which no expected text matches).
std::string AggregateText(const std::map<std::string, std::string>& env) {
  const rapidjson::Document bench = Bench();  // outlives the aggregate, which may point into it
  Result<rapidjson::Document> agg = ProcessResult(bench, Lookup(env));
  return agg ? PyJsonDumps(agg.value(), 0) : "error: " + agg.error().message;
}

TEST(ProcessResult, MakesProcessResultPysFieldsInItsOrder) {
  EXPECT_EQ(AggregateText(Env()),
            R"({"hw": "b300", "conc": 64, "image": "vllm:x", "model": "m", "infmax_model_prefix": "dsv", )"
            R"("framework": "vllm", "precision": "fp4", "spec_decoding": "none", "disagg": false, )"
            R"("recipe_fingerprint": "", "isl": 1024, "osl": 1024, )"
            R"("router": {"name": "vllm-router", "version": "0.1.14"}, "is_multinode": false, "tp": 4, "pp": 1, )"
            R"("dcp_size": 1, "pcp_size": 1, "ep": 4, "dp_attention": "true", "tput_per_gpu": 2000.0, )"
            R"("output_tput_per_gpu": 500.0, "input_tput_per_gpu": 1500.0, "mean_ttft": 0.25, )"
            R"("median_tpot": 0.02, "median_intvty": 50.0, "p99_e2el": 5.0})");
  EXPECT_EQ(ExpectedGpus(Lookup(Env())), 4);
}

TEST(ProcessResult, RefusesWhatProcessResultPyRefuses) {
  rapidjson::Document bench = Bench();
  auto env = Env();
  env.erase("ISL");
  env.erase("IMAGE");
  Result<rapidjson::Document> r = ProcessResult(bench, Lookup(env));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Missing required environment variables: ISL, IMAGE");
  env = Env();
  env["ROUTER_METADATA"] = R"({"name":"vllm-router"})";
  EXPECT_FALSE(ProcessResult(bench, Lookup(env)));
  bench.Parse(R"({"model_id":"m","max_concurrency":1,"total_token_throughput":1,"output_throughput":1,"std_tpot_ms":0})");
  r = ProcessResult(bench, Lookup(Env()));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("std_tpot_ms = 0"), std::string::npos);
}

// An aggregated multinode run as benchmark.env gives it (benchmark_env.h):
// every GPU a prefill GPU, the decode block repeated with no workers.
std::map<std::string, std::string> MultinodeEnv() {
  std::map<std::string, std::string> env = Env();
  for (const char* single : {"TP", "EP_SIZE", "DP_ATTENTION", "ROUTER_METADATA"}) env.erase(single);
  const std::map<std::string, std::string> mn = {
      {"IS_MULTINODE", "true"},      {"PREFILL_GPUS", "16"},     {"DECODE_GPUS", "0"},
      {"PREFILL_NUM_WORKERS", "1"},  {"PREFILL_TP", "16"},       {"PREFILL_EP", "16"},
      {"PREFILL_DP_ATTN", "true"},   {"DECODE_NUM_WORKERS", "0"}, {"DECODE_TP", "16"},
      {"DECODE_EP", "16"},           {"DECODE_DP_ATTN", "true"}, {"PREFILL_HARDWARE", "gb200"},
      {"DECODE_HARDWARE", "gb200"}};
  env.insert(mn.begin(), mn.end());
  return env;
}

// The expected texts are the real process_result.py's agg_r.json (InferenceX
// 843c6254, run with these variables over kBench as r.json, printed with
// json.dumps), less the power keys its aggregate_power_multinode.py adds
// (power_metric_schema_version 2, power_valid 0: power_aggregate_test.cc).
TEST(ProcessResult, MultinodeAggregatedCountsEveryGpuAsPrefill) {
  EXPECT_EQ(AggregateText(MultinodeEnv()),
            R"({"hw": "b300", "conc": 64, "image": "vllm:x", "model": "m", "infmax_model_prefix": "dsv", )"
            R"("framework": "vllm", "precision": "fp4", "spec_decoding": "none", "disagg": false, )"
            R"("recipe_fingerprint": "", "isl": 1024, "osl": 1024, "is_multinode": true, "prefill_tp": 16, )"
            R"("prefill_pp": 1, "prefill_dcp_size": 1, "prefill_pcp_size": 1, "prefill_ep": 16, )"
            R"("prefill_dp_attention": "true", "prefill_num_workers": 1, "decode_tp": 0, "decode_pp": 1, )"
            R"("decode_dcp_size": 1, "decode_pcp_size": 1, "decode_ep": 0, "decode_dp_attention": "true", )"
            R"("decode_num_workers": 0, "num_prefill_gpu": 16, "num_decode_gpu": 0, "tput_per_gpu": 500.0, )"
            R"("output_tput_per_gpu": 125.0, "input_tput_per_gpu": 375.0, "prefill_hw": "gb200", )"
            R"("decode_hw": "gb200", "mean_ttft": 0.25, "median_tpot": 0.02, "median_intvty": 50.0, "p99_e2el": 5.0})");
}

TEST(ProcessResult, MultinodeWithDecodeGpusDividesOutputByThem) {
  auto env = MultinodeEnv();
  env.erase("PREFILL_HARDWARE");
  env.erase("DECODE_HARDWARE");
  for (const auto& [k, v] : std::map<std::string, std::string>{
           {"DISAGG", "true"}, {"PREFILL_GPUS", "8"}, {"DECODE_GPUS", "16"}, {"PREFILL_NUM_WORKERS", "2"},
           {"PREFILL_TP", "4"}, {"PREFILL_EP", "4"}, {"PREFILL_DP_ATTN", "false"}, {"PREFILL_PP_SIZE", "1"},
           {"DECODE_NUM_WORKERS", "1"}, {"DECODE_TP", "8"}, {"DECODE_PP_SIZE", "2"}, {"DECODE_EP", "16"}}) {
    env[k] = v;
  }
  EXPECT_EQ(AggregateText(env),
            R"({"hw": "b300", "conc": 64, "image": "vllm:x", "model": "m", "infmax_model_prefix": "dsv", )"
            R"("framework": "vllm", "precision": "fp4", "spec_decoding": "none", "disagg": true, )"
            R"("recipe_fingerprint": "", "isl": 1024, "osl": 1024, "is_multinode": true, "prefill_tp": 4, )"
            R"("prefill_pp": 1, "prefill_dcp_size": 1, "prefill_pcp_size": 1, "prefill_ep": 4, )"
            R"("prefill_dp_attention": "false", "prefill_num_workers": 2, "decode_tp": 8, "decode_pp": 2, )"
            R"("decode_dcp_size": 1, "decode_pcp_size": 1, "decode_ep": 16, "decode_dp_attention": "true", )"
            R"("decode_num_workers": 1, "num_prefill_gpu": 8, "num_decode_gpu": 16, )"
            R"("tput_per_gpu": 333.3333333333333, "output_tput_per_gpu": 125.0, "input_tput_per_gpu": 750.0, )"
            R"("mean_ttft": 0.25, "median_tpot": 0.02, "median_intvty": 50.0, "p99_e2el": 5.0})");
  EXPECT_TRUE(IsMultinode(Lookup(env)));
}

// process_result.py's errors in its words (its ValueError/OSError text), except
// a non-integer, which Python reports as int()'s "invalid literal"; here the
// variable is named.
TEST(ProcessResult, MultinodeRefusesWhatProcessResultPyRefuses) {
  rapidjson::Document bench = Bench();
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"PREFILL_GPUS", "0"}, {"DECODE_GPUS", "8"}}, "Multinode results require at least one prefill GPU."},
      {{{"PREFILL_GPUS", "0"}, {"DECODE_GPUS", "0"}}, "Multinode results require at least one GPU."},
      {{{"DECODE_PCP_SIZE", "0"}}, "Multinode PP, DCP, and PCP sizes must be positive integers."},
      {{{"DECODE_HARDWARE", ""}}, "PREFILL_HARDWARE and DECODE_HARDWARE must be specified together."},
      {{{"PREFILL_GPUS", "x"}}, "PREFILL_GPUS='x' is not an integer"},
  };
  for (const auto& [change, message] : cases) {
    auto env = MultinodeEnv();
    for (const auto& [k, v] : change) env[k] = v;
    Result<rapidjson::Document> r = ProcessResult(bench, Lookup(env));
    ASSERT_FALSE(r) << message;
    EXPECT_EQ(r.error().message, message);
  }
  auto env = MultinodeEnv();
  env["IS_MULTINODE"] = "TRUE";  // .lower() == 'true'
  for (const char* gone : {"PREFILL_GPUS", "DECODE_GPUS", "PREFILL_NUM_WORKERS", "PREFILL_EP", "PREFILL_DP_ATTN",
                           "DECODE_NUM_WORKERS", "DECODE_TP", "DECODE_DP_ATTN"}) {
    env.erase(gone);
  }
  Result<rapidjson::Document> r = ProcessResult(bench, Lookup(env));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "Missing required environment variables: PREFILL_GPUS, DECODE_GPUS, PREFILL_NUM_WORKERS, PREFILL_EP, "
            "PREFILL_DP_ATTN, DECODE_NUM_WORKERS, DECODE_TP, DECODE_DP_ATTN");
}

}  // namespace
}  // namespace ix
