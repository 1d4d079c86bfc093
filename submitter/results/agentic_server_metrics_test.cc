#include "submitter/results/agentic_server_metrics.h"

#include <gtest/gtest.h>

#include "submitter/results/agentic_test_support.h"

namespace ix {
namespace {

TEST(VllmKvCapacity, SumsTheLastSizeOfEachEngineCore) {
  // The spec's example: DP0 5,000,000 twice plus DP1 6,500,000 (untagged ignored once tags exist).
  EXPECT_EQ(VllmKvCapacityFromLog("(EngineCore_DP0 pid=1) GPU KV cache size: 5,000,000 tokens\n"
                                  "(EngineCore_DP0 pid=1) GPU KV cache size: 5,000,000 tokens\n"
                                  "(EngineCore_DP1 pid=2) GPU KV cache size: 6,500,000 tokens\n"
                                  "GPU KV cache size: 7 tokens\n"),
            11500000);
  EXPECT_EQ(VllmKvCapacityFromLog("GPU KV cache size: 7 tokens\nGPU KV cache size: 1,000 tokens\n"), 1007);
  EXPECT_EQ(VllmKvCapacityFromLog("GPU KV cache size: 0 tokens\nno size here\n"), std::nullopt);
}

TEST(AgenticServerMetrics, RefusesUnknownMetricsWithPythonsMessage) {
  rapidjson::Document doc;
  doc.Parse(R"({"metrics": {"trt:x": {}, "a:b": {}}})");
  std::vector<std::string> warnings;
  const Result<rapidjson::Value> r =
      AgenticServerMetrics(doc, "TRT", AgenticRecords{}, {}, warnings, doc.GetAllocator());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Unsupported agentic server metrics backend; framework='trt', metric_names=[a:b, trt:x]");
}

TEST(AgenticServerMetrics, SumsSeriesAndSkipsUnlabelledOnes) {
  rapidjson::Document doc;
  doc.Parse(R"({"metrics": {"vllm:prefix_cache_hits": {"series": [{"stats": {"total": 100}}, {"stats": {"total": 200}}]},
      "vllm:prefix_cache_queries": {"series": [{"stats": {"sum": 400}}, {"stats": {"avg": 600}}, {"stats": {}}]}}})");
  const rapidjson::Value& m = ServerMetricsIndex(doc);
  EXPECT_EQ(MetricRate(SumStat(m, {"vllm:prefix_cache_hits"}), SumStat(m, {"vllm:prefix_cache_queries"})), 0.3);
  EXPECT_EQ(SumStat(m, {"vllm:nothing"}), std::nullopt);
  EXPECT_EQ(MetricRate(1.0, 0.0), std::nullopt);
}

TEST(AgenticServerMetrics, FindsServerLogAndWatchtowerLogs) {
  test::TempDir dir("agentic-logs");
  const std::string results = dir.path() + "/a/results";
  std::filesystem::create_directories(results);
  ASSERT_TRUE(WriteFileAtomic(results + "/server.log", "x"));
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/a/watchtower-2.out", "x"));
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/a/watchtower-1.out", "x"));
  ASSERT_TRUE(WriteFileAtomic(results + "/watchtower-9.out", "x"));
  EXPECT_EQ(FindServerLogPaths(results),
            (std::vector<std::string>{results + "/server.log", results + "/watchtower-9.out",
                                      dir.path() + "/a/watchtower-1.out", dir.path() + "/a/watchtower-2.out"}));
}

}  // namespace
}  // namespace ix
