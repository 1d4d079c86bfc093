#include "vllm_switches.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ixfake::vllm {
namespace {

// Each test starts and ends with none of the switches it sets, so the
// environment of the test binary (and of the other tests) never leaks in.
class VllmSwitches : public testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name : {"FAKE_VLLM_STALL_AFTER_S", "FAKE_VLLM_STALL_RANK", "FAKE_VLLM_STALL_METRICS",
                             "FAKE_VLLM_FAULT_ONLY_IF_ARG", "FAKE_VLLM_CRASH_ENGINE_RANK"}) {
      ::unsetenv(name);
    }
  }
  static void Set(const char* name, const char* value) { ::setenv(name, value, 1); }
  // A `vllm serve /m` process running local ranks 0 and 1 of 2.
  static Switches Parse(const std::vector<std::string>& argv = {"vllm", "serve", "/m"}) {
    return parse_switches(argv, {0, 1}, 2);
  }
};

// The stall switches as one value, to compare whole: after, rank, metrics.
using Stall = std::tuple<std::optional<double>, std::optional<int>, bool>;
Stall StallOf(const Switches& sw) {
  return {sw.faults.stall_after_s, sw.faults.stall_rank, sw.faults.stall_metrics};
}
const Stall kNoStall{std::nullopt, std::nullopt, false};

TEST_F(VllmSwitches, NoStallByDefault) { EXPECT_EQ(StallOf(Parse()), kNoStall); }

TEST_F(VllmSwitches, StallOfOneRankWithoutMetrics) {
  Set("FAKE_VLLM_STALL_AFTER_S", "2.5");
  Set("FAKE_VLLM_STALL_RANK", "1");
  Set("FAKE_VLLM_STALL_METRICS", "0");
  EXPECT_EQ(StallOf(Parse()), Stall(2.5, 1, false));
}

TEST_F(VllmSwitches, StallOfEveryRankWithAWedgedApiServer) {
  Set("FAKE_VLLM_STALL_AFTER_S", "0");
  Set("FAKE_VLLM_STALL_METRICS", "1");
  EXPECT_EQ(StallOf(Parse()), Stall(0.0, std::nullopt, true));
}

TEST_F(VllmSwitches, StallAppliesOnlyWhereTheFaultArgumentMatches) {
  Set("FAKE_VLLM_STALL_AFTER_S", "1");
  Set("FAKE_VLLM_STALL_RANK", "0");
  Set("FAKE_VLLM_FAULT_ONLY_IF_ARG", "--data-parallel-rank=1");
  EXPECT_EQ(StallOf(Parse({"vllm", "serve", "/m", "--data-parallel-rank", "0"})), kNoStall);
  EXPECT_EQ(StallOf(Parse({"vllm", "serve", "/m", "--data-parallel-rank", "1"})), Stall(1.0, 0, false));
}

TEST_F(VllmSwitches, MalformedStallSwitchesExit2NamingThem) {
  Set("FAKE_VLLM_STALL_AFTER_S", "-1");
  EXPECT_EXIT(Parse(), testing::ExitedWithCode(2), "FAKE_VLLM_STALL_AFTER_S='-1': expected seconds");
  Set("FAKE_VLLM_STALL_AFTER_S", "1");
  Set("FAKE_VLLM_STALL_RANK", "2");
  EXPECT_EXIT(Parse(), testing::ExitedWithCode(2),
              "FAKE_VLLM_STALL_RANK='2': expected a data-parallel rank below --data-parallel-size");
  Set("FAKE_VLLM_STALL_RANK", "one");
  EXPECT_EXIT(Parse(), testing::ExitedWithCode(2), "FAKE_VLLM_STALL_RANK='one'");
  ::unsetenv("FAKE_VLLM_STALL_RANK");
  Set("FAKE_VLLM_STALL_METRICS", "yes");
  EXPECT_EXIT(Parse(), testing::ExitedWithCode(2), "FAKE_VLLM_STALL_METRICS='yes': expected 0 or 1");
}

TEST_F(VllmSwitches, MalformedSwitchesExit2EvenWhenTheFaultArgumentDoesNotMatch) {
  Set("FAKE_VLLM_FAULT_ONLY_IF_ARG", "no-such-argument");
  Set("FAKE_VLLM_STALL_AFTER_S", "soon");
  EXPECT_EXIT(Parse(), testing::ExitedWithCode(2), "FAKE_VLLM_STALL_AFTER_S='soon'");
}

TEST_F(VllmSwitches, RankOrMetricsWithoutAStallTimeExit2) {
  Set("FAKE_VLLM_STALL_RANK", "1");
  EXPECT_EXIT(Parse(), testing::ExitedWithCode(2),
              "FAKE_VLLM_STALL_RANK='1': expected FAKE_VLLM_STALL_AFTER_S to be set too");
  ::unsetenv("FAKE_VLLM_STALL_RANK");
  Set("FAKE_VLLM_STALL_METRICS", "1");
  EXPECT_EXIT(Parse(), testing::ExitedWithCode(2),
              "FAKE_VLLM_STALL_METRICS='1': expected FAKE_VLLM_STALL_AFTER_S to be set too");
  Set("FAKE_VLLM_STALL_METRICS", "0");
  EXPECT_FALSE(Parse().faults.stall_metrics);
}

TEST(VllmStalledRanks, EveryServedRankOrTheNamedOneIfServedHere) {
  const std::vector<int> served = {4, 5, 6, 7};
  EXPECT_EQ(stalled_ranks(std::nullopt, served), served);
  EXPECT_EQ(stalled_ranks(6, served), std::vector<int>{6});
  EXPECT_TRUE(stalled_ranks(2, served).empty());  // another node or rank process serves it
  EXPECT_TRUE(stalled_ranks(std::nullopt, {}).empty());
}

}  // namespace
}  // namespace ixfake::vllm
