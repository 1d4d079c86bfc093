#include "submitter/sweep/sweep_records.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(SweepRecords, StateNames) {
  EXPECT_STREQ(StateName(SweepState::kCancelled), "cancelled");
  EXPECT_STREQ(StateName(JobState::kSubmitting), "submitting");
  EXPECT_STREQ(StateName(EntryState::kSkipped), "skipped");
  EXPECT_STREQ(JobKindName(JobKind::kCanary), "canary");
  EXPECT_TRUE(IsFinal(EntryState::kSkipped));
  EXPECT_TRUE(IsFinal(EntryState::kCancelled));
  EXPECT_FALSE(IsFinal(EntryState::kRunning));
  EXPECT_FALSE(IsFinal(EntryState::kPending));
}

// Every name parses back to its value, as the store reads its rows.
TEST(SweepRecords, NamesParseBack) {
  for (int i = 0; i <= static_cast<int>(SweepState::kCancelled); ++i) {
    SweepState s = SweepState::kSubmitting;
    ASSERT_TRUE(ParseStateName(StateName(static_cast<SweepState>(i)), s));
    EXPECT_EQ(static_cast<int>(s), i);
  }
  for (int i = 0; i <= static_cast<int>(JobState::kFinished); ++i) {
    JobState s = JobState::kPlanned;
    ASSERT_TRUE(ParseStateName(StateName(static_cast<JobState>(i)), s));
    EXPECT_EQ(static_cast<int>(s), i);
  }
  for (int i = 0; i <= static_cast<int>(EntryState::kSkipped); ++i) {
    EntryState s = EntryState::kPending;
    ASSERT_TRUE(ParseStateName(StateName(static_cast<EntryState>(i)), s));
    EXPECT_EQ(static_cast<int>(s), i);
  }
  JobKind k = JobKind::kArray;
  ASSERT_TRUE(ParseJobKind("canary", k));
  EXPECT_EQ(k, JobKind::kCanary);
  // An unknown name leaves the value as it was.
  EntryState e = EntryState::kRunning;
  EXPECT_FALSE(ParseStateName("RUNNING", e));
  EXPECT_EQ(e, EntryState::kRunning);
  EXPECT_FALSE(ParseJobKind("", k));
}

}  // namespace
}  // namespace ix
