#include "serving_metrics.h"

#include <gtest/gtest.h>

namespace ixfake::client {
namespace {

// Expected values worked by hand by numpy's definitions (np.mean,
// np.median, np.std, np.percentile(v, 90 / 99 / 99.9)).
TEST(ServingMetrics, StatsAreNumpys) {
  const MetricStats s = StatsOf({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.std, 1.118033988749895);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  EXPECT_DOUBLE_EQ(s.p99_9, 3.997);
  const MetricStats none = StatsOf({});
  EXPECT_EQ(none.mean, 0);
  EXPECT_EQ(none.p99, 0);
}

TEST(ServingMetrics, TheRealClientsRules) {
  // 1000 ms, first token at 100 ms, 10 tokens: TPOT 100 ms; a one-token
  // answer has no TPOT; a request without TTFT counts 0.
  const std::vector<ServedRequest> r = {{1000, 100, 50, 10}, {300, 300, 20, 1}, {900, 0, 30, 4}};
  const ServingMetrics m = ComputeServingMetrics(r, 2.0);
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.total_input_tokens, 100);
  EXPECT_EQ(m.total_output_tokens, 15);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(m.output_throughput, 7.5);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 57.5);
  EXPECT_DOUBLE_EQ(m.tpot.mean, 200.0);    // (100 + 300) / 2
  EXPECT_DOUBLE_EQ(m.itl.mean, 1800.0 / 12);  // 9 gaps of 100, 3 of 300
  EXPECT_DOUBLE_EQ(m.ttft.mean, 400.0 / 3);
  EXPECT_DOUBLE_EQ(m.e2el.median, 900.0);
}

}  // namespace
}  // namespace ixfake::client
