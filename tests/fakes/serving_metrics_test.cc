#include "serving_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace ixfake::client {
namespace {

using ::testing::DoubleEq;
using ::testing::Each;
using ::testing::Pointwise;

// The statistics in declaration order, to compare with one expectation.
std::vector<double> Values(const MetricStats& s) { return {s.mean, s.median, s.std, s.p90, s.p99, s.p99_9}; }

// Expected values worked by hand by numpy's definitions (np.mean,
// np.median, np.std, np.percentile(v, 90 / 99 / 99.9)).
TEST(ServingMetrics, StatsAreNumpys) {
  EXPECT_THAT(Values(StatsOf({4, 1, 3, 2})),
              Pointwise(DoubleEq(), std::vector<double>{2.5, 2.5, 1.118033988749895, 3.7, 3.97, 3.997}));
  EXPECT_THAT(Values(StatsOf({})), Each(0.0));
}

TEST(ServingMetrics, TheRealClientsRules) {
  // 1000 ms, first token at 100 ms, 10 tokens: TPOT 100 ms; a one-token
  // answer has no TPOT; a request without TTFT counts 0.
  const std::vector<ServedRequest> r = {{1000, 100, 50, 10}, {300, 300, 20, 1}, {900, 0, 30, 4}};
  const ServingMetrics m = ComputeServingMetrics(r, 2.0);
  // completed, input and output tokens; request, output and total token
  // throughput; TPOT ((100 + 300) / 2), ITL (9 gaps of 100, 3 of 300), TTFT
  // and E2EL.
  const std::vector<double> got = {static_cast<double>(m.completed), static_cast<double>(m.total_input_tokens),
                                   static_cast<double>(m.total_output_tokens), m.request_throughput,
                                   m.output_throughput, m.total_token_throughput, m.tpot.mean, m.itl.mean,
                                   m.ttft.mean, m.e2el.median};
  EXPECT_THAT(got, Pointwise(DoubleEq(), std::vector<double>{3, 100, 15, 1.5, 7.5, 57.5, 200.0, 1800.0 / 12,
                                                             400.0 / 3, 900.0}));
}

}  // namespace
}  // namespace ixfake::client
