#include "core/process/hang_watch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace ix {
namespace {

constexpr std::optional<double> kUnset = std::nullopt;

// A fake clock and one engine: each Tick advances the clock and observes.
class HangWatchTest : public ::testing::Test {
 protected:
  HangWatch watch{60};
  double now = 1000;

  bool At(double t, std::optional<double> running, std::optional<double> tokens) {
    now = t;
    return watch.Observe(now, running, tokens);
  }

  // A reading and whether it must report a hang.
  struct Reading {
    double t;
    std::optional<double> running, tokens;
    bool reports_hang;
  };
  void ExpectReports(std::initializer_list<Reading> readings) {
    for (const Reading& r : readings) EXPECT_EQ(At(r.t, r.running, r.tokens), r.reports_hang) << "at " << r.t;
  }
};

TEST_F(HangWatchTest, BusyWithAMovingCounterIsNeverHung) {
  for (int i = 0; i <= 600; ++i) {
    EXPECT_FALSE(At(1000 + i, 8, 100.0 * i)) << i;
    EXPECT_FALSE(watch.hung());
  }
  EXPECT_EQ(watch.stalled_for(now), 0);
}

TEST_F(HangWatchTest, BusyWithAStillCounterHangsAfterTheThresholdOnce) {
  EXPECT_FALSE(At(1000, 4, 500));
  EXPECT_FALSE(At(1030, 4, 500));
  EXPECT_DOUBLE_EQ(watch.stalled_for(1030), 30);
  EXPECT_FALSE(At(1059.5, 4, 500));
  EXPECT_FALSE(watch.hung());
  EXPECT_TRUE(At(1060, 4, 500));  // exactly hang_after: hung
  EXPECT_TRUE(watch.hung());
  EXPECT_DOUBLE_EQ(watch.stalled_for(1060), 60);
  // The same episode: no second report.
  EXPECT_FALSE(At(1061, 4, 500));
  EXPECT_FALSE(At(2000, 4, 500));
  EXPECT_TRUE(watch.hung());
  EXPECT_DOUBLE_EQ(watch.stalled_for(2000), 1000);
}

TEST_F(HangWatchTest, TheStallClockStartsAtTheLastChange) {
  // Progress at 1050: hung 60 s later.
  ExpectReports({{1000, 4, 100, false}, {1050, 4, 200, false}, {1100, 4, 200, false}, {1109, 4, 200, false},
                 {1110, 4, 200, true}});
}

TEST_F(HangWatchTest, ProgressEndsAnEpisodeAndANewOneIsReportedAgain) {
  At(1000, 1, 7);
  EXPECT_TRUE(At(1060, 1, 7));
  EXPECT_FALSE(At(1061, 1, 8));
  EXPECT_FALSE(watch.hung());
  EXPECT_EQ(watch.stalled_for(1061), 0);
  EXPECT_FALSE(At(1120, 1, 8));
  EXPECT_TRUE(At(1121, 1, 8));
  EXPECT_TRUE(watch.hung());
}

TEST_F(HangWatchTest, ACounterResetIsAChange) {
  At(1000, 2, 9000);
  At(1059, 2, 9000);
  EXPECT_FALSE(At(1059.9, 2, 0));  // the engine restarted: its counter starts over
  EXPECT_FALSE(watch.hung());
  EXPECT_FALSE(At(1100, 2, 0));
  EXPECT_TRUE(At(1119.9, 2, 0));
}

TEST_F(HangWatchTest, IdleIsNotHungAndResetsTheClock) {
  At(1000, 3, 50);
  EXPECT_FALSE(At(1059, 0, 50));  // the requests finished
  EXPECT_FALSE(watch.hung());
  EXPECT_EQ(watch.stalled_for(1059), 0);
  // Idle for long with a still counter: fine.
  EXPECT_FALSE(At(5000, 0, 50));
  // Busy again: the clock starts at the first busy reading.
  EXPECT_FALSE(At(5001, 1, 50));
  EXPECT_FALSE(At(5060, 1, 50));
  EXPECT_TRUE(At(5061, 1, 50));
}

TEST_F(HangWatchTest, IdleEndsAnEpisode) {
  At(1000, 3, 50);
  EXPECT_TRUE(At(1060, 3, 50));
  EXPECT_FALSE(At(1061, 0, 50));
  EXPECT_FALSE(watch.hung());
  EXPECT_FALSE(At(1062, 3, 50));
  EXPECT_TRUE(At(1122, 3, 50));
}

TEST_F(HangWatchTest, UnsetReadingsKeepTheState) {
  At(1000, 5, 10);
  EXPECT_FALSE(At(1020, kUnset, kUnset));  // the engine did not answer
  EXPECT_FALSE(At(1040, 5, kUnset));       // no counter: no evidence
  EXPECT_FALSE(At(1050, kUnset, 10));      // no requests reading: no evidence
  EXPECT_DOUBLE_EQ(watch.stalled_for(1050), 50);
  EXPECT_TRUE(At(1060, 5, 10));  // the clock ran from 1000 all along
  EXPECT_FALSE(At(1070, kUnset, kUnset));
  EXPECT_TRUE(watch.hung());  // still in the episode
  EXPECT_FALSE(At(1080, 5, 10));
}

TEST_F(HangWatchTest, OnlyUnsetReadingsNeverHang) {
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(At(1000 + i, kUnset, kUnset));
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(At(3000 + i, 4, kUnset));
  EXPECT_FALSE(watch.hung());
  EXPECT_EQ(watch.stalled_for(now), 0);
}

TEST_F(HangWatchTest, BusyWithoutACounterThenACounterStartsTheClockThen) {
  // The first counter reading, at 1100, starts the clock.
  ExpectReports({{1000, 4, kUnset, false}, {1100, 4, 3, false}, {1159, 4, 3, false}, {1160, 4, 3, true}});
}

TEST_F(HangWatchTest, ProgressWithoutARequestsReadingStillCounts) {
  At(1000, 4, 10);
  EXPECT_FALSE(At(1050, kUnset, 11));  // moved: progress, whatever is running
  EXPECT_FALSE(At(1100, 4, 11));
  EXPECT_TRUE(At(1110, 4, 11));
}

TEST_F(HangWatchTest, ProgressWhileIdleDoesNotStartTheClock) {
  At(1000, 0, 10);
  EXPECT_FALSE(At(1010, kUnset, 11));
  EXPECT_EQ(watch.stalled_for(1010), 0);
  EXPECT_FALSE(At(1020, 2, 11));  // busy now: the clock starts here
  EXPECT_FALSE(At(1079, 2, 11));
  EXPECT_TRUE(At(1080, 2, 11));
}

TEST_F(HangWatchTest, NonFiniteReadingsAreUnset) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  At(1000, 4, 10);
  EXPECT_FALSE(At(1030, 4, nan));  // not a change
  EXPECT_FALSE(At(1040, nan, 10));
  EXPECT_FALSE(At(1050, inf, inf));
  EXPECT_TRUE(At(1060, 4, 10));
}

TEST_F(HangWatchTest, FractionalRequestsRunningCountAsBusy) {
  // A sum of gauges may be fractional; anything above zero is work.
  At(1000, 0.5, 1);
  EXPECT_TRUE(At(1060, 0.5, 1));
}

TEST(HangWatch, TheThresholdIsTheConstructorsAndTheStartingStateIsCalm) {
  HangWatch w(5);
  EXPECT_EQ(w.hang_after(), 5);
  EXPECT_FALSE(w.hung());
  EXPECT_EQ(w.stalled_for(0), 0);
  EXPECT_FALSE(w.Observe(0, 1, 1));
  EXPECT_FALSE(w.Observe(4.9, 1, 1));
  EXPECT_TRUE(w.Observe(5, 1, 1));
}

TEST(HangWatch, ACopyCarriesItsState) {
  HangWatch a(10);
  a.Observe(0, 1, 1);
  HangWatch b = a;
  EXPECT_TRUE(b.Observe(10, 1, 1));
  EXPECT_TRUE(a.Observe(10, 1, 1));  // each its own episode
}

TEST(HangWatch, AClockThatStepsBackIsNotAStall) {
  HangWatch w(10);
  w.Observe(100, 1, 1);
  EXPECT_FALSE(w.Observe(50, 1, 1));
  EXPECT_EQ(w.stalled_for(50), 0);
}

// Several progress counters (vLLM: generation and prompt tokens), one
// engine; each reading is busy and the list.
class HangWatchCountersTest : public ::testing::Test {
 protected:
  HangWatch watch{60};

  bool At(double t, std::optional<double> busy, std::vector<std::optional<double>> counters) {
    return watch.ObserveCounters(t, busy, counters);
  }
};

TEST_F(HangWatchCountersTest, EitherCounterMovingIsProgress) {
  // A long prefill: prompt tokens move, generation tokens stand still.
  for (int i = 0; i <= 300; ++i) EXPECT_FALSE(At(1000 + i, 4, {500, 100.0 * i})) << i;
  // Decoding: the other way round.
  for (int i = 0; i <= 300; ++i) EXPECT_FALSE(At(1301 + i, 4, {500.0 + i, 30000})) << i;
  EXPECT_FALSE(watch.hung());
  EXPECT_EQ(watch.stalled_for(1601), 0);
}

TEST_F(HangWatchCountersTest, BusyWithEveryCounterStillHangsOnce) {
  EXPECT_FALSE(At(1000, 2, {10, 20}));
  EXPECT_FALSE(At(1030, 2, {11, 20}));  // progress at 1030
  EXPECT_FALSE(At(1089, 2, {11, 20}));
  EXPECT_TRUE(At(1090, 2, {11, 20}));
  EXPECT_TRUE(watch.hung());
  EXPECT_FALSE(At(1200, 2, {11, 20}));
  EXPECT_EQ(watch.last_counters(), (std::vector<std::optional<double>>{11, 20}));
  EXPECT_FALSE(At(1201, 2, {11, 21}));  // a prompt moved: the episode ends
  EXPECT_FALSE(watch.hung());
}

TEST_F(HangWatchCountersTest, OneUnsetCounterIsNoEvidenceOfAStall) {
  At(1000, 2, {10, 20});
  EXPECT_FALSE(At(1060, 2, {10, kUnset}));  // the unset one may be the one that moved
  EXPECT_FALSE(watch.hung());
  EXPECT_DOUBLE_EQ(watch.stalled_for(1060), 60);  // but the clock is kept
  EXPECT_TRUE(At(1061, 2, {10, 20}));
}

TEST_F(HangWatchCountersTest, NoCountersNeverStall) {
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(At(1000 + i, 4, {}));
  EXPECT_FALSE(watch.hung());
  EXPECT_EQ(watch.stalled_for(2000), 0);
}

TEST_F(HangWatchCountersTest, AListOfAnotherLengthStartsOver) {
  At(1000, 2, {10});
  EXPECT_FALSE(At(1059, 2, {10, 20}));  // read for the first time: a change
  EXPECT_FALSE(At(1118, 2, {10, 20}));
  EXPECT_TRUE(At(1119, 2, {10, 20}));
}

TEST_F(HangWatchCountersTest, OneCounterIsTheTwoArgumentObserve) {
  HangWatch one(60);
  for (double t : {1000.0, 1030.0, 1059.0, 1060.0, 1061.0}) {
    EXPECT_EQ(At(t, 3, {7}), one.Observe(t, 3, 7)) << t;
    EXPECT_EQ(watch.hung(), one.hung()) << t;
  }
  EXPECT_TRUE(one.hung());
}

// ObserveNoAnswer: the server's process lives and it did not answer.
TEST_F(HangWatchCountersTest, AnEngineThatNeverAnswersHangsAfterTheThresholdOnce) {
  EXPECT_FALSE(watch.ObserveNoAnswer(1000));
  EXPECT_FALSE(watch.ObserveNoAnswer(1059.5));
  EXPECT_DOUBLE_EQ(watch.stalled_for(1059.5), 59.5);
  EXPECT_TRUE(watch.ObserveNoAnswer(1060));
  EXPECT_TRUE(watch.hung());
  EXPECT_FALSE(watch.ObserveNoAnswer(1061));
  EXPECT_FALSE(watch.ObserveNoAnswer(5000));
  EXPECT_TRUE(watch.hung());
}

TEST_F(HangWatchCountersTest, AnIdleEngineIsNeverHung) {
  // It answers, with nothing running and counters standing still.
  for (int i = 0; i <= 1000; ++i) EXPECT_FALSE(At(1000 + i, 0, {10, 20})) << i;
  EXPECT_FALSE(watch.hung());
  EXPECT_EQ(watch.stalled_for(2000), 0);
}

TEST_F(HangWatchCountersTest, AnIdleAnswerBetweenSilencesResetsTheClock) {
  EXPECT_FALSE(watch.ObserveNoAnswer(1000));
  EXPECT_FALSE(At(1050, 0, {10, 20}));  // a slow answer, idle
  EXPECT_EQ(watch.stalled_for(1050), 0);
  EXPECT_FALSE(watch.ObserveNoAnswer(1051));
  EXPECT_FALSE(watch.ObserveNoAnswer(1110));
  EXPECT_TRUE(watch.ObserveNoAnswer(1111));
  EXPECT_FALSE(At(1112, 0, {10, 20}));  // idle ends the episode
  EXPECT_FALSE(watch.hung());
}

TEST_F(HangWatchCountersTest, SilenceContinuesTheStallOfABusyEngine) {
  At(1000, 4, {10, 20});  // busy, the clock starts
  EXPECT_FALSE(watch.ObserveNoAnswer(1030));
  EXPECT_DOUBLE_EQ(watch.stalled_for(1030), 30);
  EXPECT_TRUE(watch.ObserveNoAnswer(1060));
}

TEST_F(HangWatchCountersTest, AnAnswerAfterSilenceIsComparedWithTheLastCounters) {
  At(1000, 4, {10, 20});
  watch.ObserveNoAnswer(1030);
  EXPECT_EQ(watch.last_counters(), (std::vector<std::optional<double>>{10, 20}));
  EXPECT_FALSE(At(1040, 4, {10, 20}));  // the same counters: no progress
  EXPECT_TRUE(At(1060, 4, {10, 20}));
  watch.ObserveNoAnswer(1070);
  EXPECT_FALSE(At(1080, 4, {11, 20}));  // moved: progress ends the episode
  EXPECT_FALSE(watch.hung());
  EXPECT_EQ(watch.stalled_for(1080), 0);
}

TEST_F(HangWatchCountersTest, ProgressAfterSilenceRestartsTheClock) {
  watch.ObserveNoAnswer(1000);
  EXPECT_FALSE(At(1050, 4, {10, 20}));  // the first reading: progress
  EXPECT_EQ(watch.stalled_for(1050), 0);
  EXPECT_FALSE(watch.ObserveNoAnswer(1109));
  EXPECT_TRUE(watch.ObserveNoAnswer(1110));
}

TEST(HangWatch, ACopyCarriesItsCountersAndItsSilence) {
  HangWatch a(10);
  a.ObserveCounters(0, 1, {1, 2});
  a.ObserveNoAnswer(5);
  HangWatch b = a;
  EXPECT_EQ(b.last_counters(), a.last_counters());
  EXPECT_TRUE(b.ObserveNoAnswer(10));
  EXPECT_TRUE(a.ObserveCounters(10, 1, {1, 2}));  // each its own episode
}

}  // namespace
}  // namespace ix
