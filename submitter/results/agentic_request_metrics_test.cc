#include "submitter/results/agentic_request_metrics.h"

#include <gtest/gtest.h>

#include "submitter/results/python_json.h"

namespace ix {
namespace {

// Each expected value is what Python 3.11 printed (repr) for the same call.
TEST(AgenticStats, MatchPythonsStatisticsModule) {
  EXPECT_EQ(PyFloatRepr(PyMean({0.1, 0.2, 0.3})), "0.2");  // a plain sum gives 0.20000000000000004
  EXPECT_EQ(PyFloatRepr(PyMean({1e16, 1.0, -1e16})), "0.3333333333333333");
  EXPECT_EQ(PyFloatRepr(PyPStdev({0.1, 0.2, 0.3})), "0.0816496580927726");
  EXPECT_EQ(PyFloatRepr(PyPStdev({1.0, 2.0, 4.0})), "1.247219128924647");
  EXPECT_EQ(PyJsonDumps(PyMeanOfInts({1, 2})), "1.5");
  EXPECT_EQ(PyJsonDumps(PyMeanOfInts({2, 4})), "3");
  EXPECT_EQ(PyFloatRepr(PyPercentile({3.0, 1.0, 2.0, 10.0}, 90)), "7.900000000000001");
  EXPECT_EQ(PyPercentile({}, 50), 0.0);
  EXPECT_EQ(PyPercentile({4.0}, 95), 4.0);
}

AgenticRecords Records(const char* json) {
  AgenticRecords r;
  r.kept.Parse(json);
  r.total = r.kept.Size();
  return r;
}

TEST(AgenticRequestMetrics, LeavesEmptyWhatTheRecordsCannotGive) {
  const AgenticRecords r = Records(R"([{"metadata": {}, "metrics": {}}])");
  rapidjson::Document aggregate(rapidjson::kObjectType);
  rapidjson::Value m = AgenticRequestMetrics(r, aggregate, 4, aggregate.GetAllocator());
  EXPECT_EQ(PyJsonDumps(m, 0),
            R"({"qps": {}, "latency": {"ttft": {}, "e2el": {}, "itl": {}, "tpot": {}, "intvty": {}, "e2e_norm_intvty": {},)"
            R"( "full_response_itl": {}, "full_response_intvty": {}}, "tokens": {"input": {}, "output_actual": {},)"
            R"( "output_expected": {}}, "throughput": {}, "cache": {"theoretical_cache_hit_rate": null}})");
}

}  // namespace
}  // namespace ix
