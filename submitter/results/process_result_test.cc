#include "submitter/results/process_result.h"

#include <gtest/gtest.h>

#include <map>

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

TEST(ProcessResult, MakesProcessResultPysFieldsInItsOrder) {
  rapidjson::Document bench;
  bench.Parse(kBench);
  Result<rapidjson::Document> agg = ProcessResult(bench, Lookup(Env()));
  ASSERT_TRUE(agg) << agg.error().message;
  EXPECT_EQ(PyJsonDumps(agg.value(), 0),
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
  rapidjson::Document bench;
  bench.Parse(kBench);
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

}  // namespace
}  // namespace ix
