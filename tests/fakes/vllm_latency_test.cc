#include "vllm_latency.h"

#include <gtest/gtest.h>

#include <vector>

namespace ixfake::vllm {
namespace {

TEST(VllmLatency, AStepGrowsWithTheOtherSequencesOnTheRank) {
  const LatencyModel m{0.0003, 0.0001, 0.02};
  EXPECT_DOUBLE_EQ(m.step_s(1), 0.0003);
  EXPECT_DOUBLE_EQ(m.step_s(0), 0.0003);  // at least this sequence
  EXPECT_DOUBLE_EQ(m.step_s(8), 0.0003 + 7 * 0.0001);
  EXPECT_DOUBLE_EQ(m.step_s(64), 0.0003 + 63 * 0.0001);
}

TEST(VllmLatency, ThroughputGrowsThenSaturates) {
  const LatencyModel m{0.0003, 0.0001, 0};
  std::vector<double> tput;
  for (long b : {1L, 2L, 8L, 64L, 512L, 4096L}) tput.push_back(static_cast<double>(b) / m.step_s(b));
  for (std::size_t i = 1; i < tput.size(); ++i) EXPECT_GT(tput[i], tput[i - 1]);
  EXPECT_LT(tput.back(), 1 / m.per_seq_s);  // the limit
  EXPECT_GT(tput.back(), 0.9 / m.per_seq_s);
}

TEST(VllmLatency, PrefillIsPerThousandTokensAndSlowsWithTheStep) {
  const LatencyModel m{0.0003, 0.0001, 0.02};
  EXPECT_DOUBLE_EQ(m.prefill_s(1000, 1), 0.02);
  EXPECT_DOUBLE_EQ(m.prefill_s(500, 1), 0.01);
  EXPECT_DOUBLE_EQ(m.prefill_s(1000, 4), 0.02 * (0.0006 / 0.0003));
  EXPECT_DOUBLE_EQ(m.prefill_s(0, 4), 0);
  const LatencyModel no_base{0, 0.0001, 0.02};  // nothing to scale by
  EXPECT_DOUBLE_EQ(no_base.prefill_s(1000, 16), 0.02);
  EXPECT_TRUE((LatencyModel{}).zero());
  EXPECT_FALSE(no_base.zero());
}

TEST(VllmLatency, TokensAreDueOneStepApartAfterThePrefill) {
  const LatencyModel m{0.001, 0.0005, 0.01};
  TokenPacer p(m, 100.0, 2000);
  EXPECT_DOUBLE_EQ(p.next_due(1), 100.0 + 0.02 + 0.001);  // prefill of 2k tokens, then a step
  EXPECT_DOUBLE_EQ(p.next_due(1), 100.0 + 0.022);
  EXPECT_DOUBLE_EQ(p.next_due(3), 100.0 + 0.022 + 0.002);  // two others joined
}

TEST(VllmLatency, SmallGapsAreSentWithoutSleepingButTheFirstAndLastAreWaitedFor) {
  const double gap = TokenPacer::kMinSleepS / 4;
  EXPECT_TRUE(TokenPacer::must_wait(10 + gap, 10, 0, 100));    // the first token: TTFT
  EXPECT_FALSE(TokenPacer::must_wait(10 + gap, 10, 5, 100));   // sent early, by less than kMinSleepS
  EXPECT_TRUE(TokenPacer::must_wait(10 + 4 * gap + 1e-6, 10, 5, 100));
  EXPECT_TRUE(TokenPacer::must_wait(10 + gap, 10, 99, 100));   // the last token: the end of the answer
  EXPECT_FALSE(TokenPacer::must_wait(9.5, 10, 0, 100));        // already due: no sleep
}

TEST(VllmLatency, TheWriteIntervalGrowsWithTheStreams) {
  EXPECT_DOUBLE_EQ(TokenPacer::write_interval_s(0), TokenPacer::kMinSleepS);
  EXPECT_DOUBLE_EQ(TokenPacer::write_interval_s(1), TokenPacer::kMinSleepS);
  EXPECT_DOUBLE_EQ(TokenPacer::write_interval_s(128), 128 * TokenPacer::kWriteIntervalPerStreamS);
  EXPECT_FALSE(TokenPacer::must_wait(10.005, 10, 5, 100, TokenPacer::write_interval_s(128)));
  EXPECT_TRUE(TokenPacer::must_wait(10.005, 10, 5, 100, TokenPacer::write_interval_s(1)));
}

}  // namespace
}  // namespace ixfake::vllm
