#include "submitter/results/entry_result.h"

#include <gtest/gtest.h>

#include "core/base/file_text.h"
#include "submitter/results/results_test_entries.h"
#include "tests/support/test.h"

namespace ix {
namespace {

// A client result in benchmark_serving.py's format (its keys, a subset).
const char kClient[] =
    R"({"date": "20261205-184708", "backend": "openai-chat", "model_id": "org/model", "max_concurrency": 64,)"
    R"( "duration": 61.37210987, "benchmark_start_time_unix": 1796496424.9341188,)"
    R"( "benchmark_end_time_unix": 1796496486.3062287, "completed": 640, "total_input_tokens": 590123,)"
    R"( "total_output_tokens": 601877, "request_throughput": 10.428331, "output_throughput": 9807.11871234,)"
    R"( "total_token_throughput": 19422.7313377, "mean_ttft_ms": 157.85937696873589,)"
    R"( "median_ttft_ms": 160.85089199768845, "p99_ttft_ms": 368.97076130138885,)"
    R"( "mean_tpot_ms": 6.3894715211852162, "median_tpot_ms": 6.2996724213756738,)"
    R"( "std_tpot_ms": 0.032827036488558499, "p99.9_tpot_ms": 7.0001864548896058,)"
    R"( "mean_itl_ms": 6.3894787884947457, "mean_e2el_ms": 6012.992407843909,)"
    R"( "p99.9_e2el_ms": 7088.2761860927057})";

// What InferenceX's own utils/process_result.py (843c6254, with its
// aggregate_power_multinode.py) wrote, byte for byte, in a copy of this
// test's result directory with benchmark.env sourced (`set -a;
// . ./benchmark.env`) and no LOGS/power: the multinode branch's fields,
// then power_valid 0.
const char kExpectedAgg[] = R"EXPECTED({
  "hw": "b300-mn",
  "conc": 64,
  "image": "vllm/vllm-openai:nightly",
  "model": "org/model",
  "infmax_model_prefix": "mn",
  "framework": "vllm",
  "precision": "fp4",
  "spec_decoding": "none",
  "disagg": false,
  "recipe_fingerprint": "",
  "isl": 1024,
  "osl": 1024,
  "router": {
    "name": "vllm-router",
    "version": "0.1.14"
  },
  "is_multinode": true,
  "prefill_tp": 16,
  "prefill_pp": 1,
  "prefill_dcp_size": 1,
  "prefill_pcp_size": 1,
  "prefill_ep": 16,
  "prefill_dp_attention": "true",
  "prefill_num_workers": 1,
  "decode_tp": 0,
  "decode_pp": 1,
  "decode_dcp_size": 1,
  "decode_pcp_size": 1,
  "decode_ep": 0,
  "decode_dp_attention": "true",
  "decode_num_workers": 0,
  "num_prefill_gpu": 16,
  "num_decode_gpu": 0,
  "tput_per_gpu": 1213.92070860625,
  "output_tput_per_gpu": 612.94491952125,
  "input_tput_per_gpu": 600.975789085,
  "mean_ttft": 0.1578593769687359,
  "median_ttft": 0.16085089199768846,
  "p99_ttft": 0.36897076130138884,
  "mean_tpot": 0.006389471521185216,
  "mean_intvty": 156.5074664914548,
  "median_tpot": 0.006299672421375674,
  "median_intvty": 158.73841258901962,
  "std_tpot": 3.2827036488558495e-05,
  "std_intvty": 30462.694990714102,
  "p99.9_tpot": 0.007000186454889606,
  "p99.9_intvty": 142.8533377566684,
  "mean_itl": 0.006389478788494746,
  "mean_e2el": 6.0129924078439085,
  "p99.9_e2el": 7.088276186092706,
  "power_metric_schema_version": 2,
  "power_valid": 0
})EXPECTED";

TEST(WriteEntryAgg, AMultinodeEntrysAggIsWhatProcessResultPyWrites) {
  const test::TempDir dir("ix-entry-agg");
  Result<EnvVars> env = BenchmarkEnvironment(test::Dep16MultinodeEntry(), "head");
  ASSERT_TRUE(env) << env.error().message;
  const std::string name = EnvValue(env.value(), "RESULT_FILENAME");
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/" + name + ".json", kClient).ok());
  // Single-node telemetry: not what multinode power is made from.
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/gpu_metrics.csv", "timestamp, index, power.draw [W]\n1, 0, 1 W\n").ok());
  const EntryRunInfo run{"sw", 3, "mn-agg", "r", "dep16", "7", "7_0", "head"};
  Result<std::string> agg = WriteEntryAgg(dir.path(), env.value(), run);
  ASSERT_TRUE(agg) << agg.error().message;
  EXPECT_EQ(agg.value(), dir.path() + "/" + AggFileName(name));
  int err = 0;
  const std::string text = ReadFileText(agg.value(), &err);
  ASSERT_EQ(err, 0);
  const size_t ix = text.find(",\n  \"ix\": {");
  ASSERT_NE(ix, std::string::npos) << text;
  EXPECT_EQ(text.substr(0, ix) + "\n}", kExpectedAgg);
  EXPECT_NE(text.find("\"arm\": \"dep16\"", ix), std::string::npos) << text.substr(ix);
}

}  // namespace
}  // namespace ix
