#include "spank_plugin/memlock_policy.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

MemlockSetting Site(MemlockSetting::Mode mode, uint64_t bytes = 0) {
  MemlockSetting s;
  s.mode = mode;
  s.bytes = bytes;
  return s;
}

MemlockLimit Bytes(uint64_t n) { return MemlockLimit{false, n}; }
MemlockLimit Unlimited() { return MemlockLimit{true, 0}; }

TEST(MemlockPolicy, NothingPinnedLeavesTheLimit) {
  const MemlockDecision d = DecideMemlock("", Site(MemlockSetting::Mode::kUnlimited), Bytes(8 << 20));
  EXPECT_FALSE(d.raise_to);
  ASSERT_TRUE(d.tasks_limit);
  EXPECT_EQ(d.tasks_limit->bytes, 8u << 20);
  EXPECT_EQ(d.reason, "the recipe pins no host memory: RLIMIT_MEMLOCK left as it is");
}

TEST(MemlockPolicy, PinnedRaisesToTheSiteCap) {
  MemlockDecision d = DecideMemlock("engram_tables", Site(MemlockSetting::Mode::kUnlimited), Bytes(8 << 20));
  ASSERT_TRUE(d.raise_to);
  EXPECT_TRUE(d.raise_to->unlimited);
  EXPECT_TRUE(d.tasks_limit->unlimited);
  EXPECT_EQ(d.reason, "the recipe pins host memory (engram_tables): RLIMIT_MEMLOCK raised to unlimited (memlock=unlimited)");

  d = DecideMemlock("engram_tables", Site(MemlockSetting::Mode::kBytes, 256ull << 30), Bytes(8 << 20));
  ASSERT_TRUE(d.raise_to);
  EXPECT_FALSE(d.raise_to->unlimited);
  EXPECT_EQ(d.raise_to->bytes, 256ull << 30);
  EXPECT_EQ(d.tasks_limit->bytes, 256ull << 30);
  EXPECT_NE(d.reason.find("raised to 256 GiB (memlock=274877906944)"), std::string::npos) << d.reason;
}

TEST(MemlockPolicy, KeepForbidsRaising) {
  const MemlockDecision d = DecideMemlock("engram_tables", Site(MemlockSetting::Mode::kKeep), Bytes(8 << 20));
  EXPECT_FALSE(d.raise_to);
  EXPECT_EQ(d.tasks_limit->bytes, 8u << 20);
  EXPECT_EQ(d.reason, "the recipe pins host memory (engram_tables), but memlock=keep: RLIMIT_MEMLOCK left as it is");
}

TEST(MemlockPolicy, NeverLowers) {
  // Unlimited already, or above the cap: nothing to do.
  MemlockDecision d = DecideMemlock("t", Site(MemlockSetting::Mode::kBytes, 1 << 30), Unlimited());
  EXPECT_FALSE(d.raise_to);
  EXPECT_TRUE(d.tasks_limit->unlimited);
  EXPECT_NE(d.reason.find("is unlimited already"), std::string::npos) << d.reason;
  d = DecideMemlock("t", Site(MemlockSetting::Mode::kBytes, 1 << 30), Bytes(2u << 30));
  EXPECT_FALSE(d.raise_to);
  EXPECT_EQ(d.tasks_limit->bytes, 2u << 30);
  d = DecideMemlock("t", Site(MemlockSetting::Mode::kUnlimited), Unlimited());
  EXPECT_FALSE(d.raise_to);
}

TEST(MemlockPolicy, UnknownCurrentLimitIsRaised) {
  const MemlockDecision d = DecideMemlock("t", Site(MemlockSetting::Mode::kBytes, 1 << 30), std::nullopt);
  ASSERT_TRUE(d.raise_to);
  EXPECT_EQ(d.raise_to->bytes, 1u << 30);
}

TEST(MemlockPolicy, AFailedRaiseKeepsTheActualLimit) {
  MemlockDecision d = DecideMemlock("engram_tables", Site(MemlockSetting::Mode::kUnlimited), Bytes(8 << 20));
  RecordRaiseFailure(d, Bytes(8 << 20), "Operation not permitted");
  EXPECT_FALSE(d.raise_to);
  ASSERT_TRUE(d.tasks_limit);
  EXPECT_EQ(d.tasks_limit->bytes, 8u << 20);
  EXPECT_EQ(d.reason, "the recipe pins host memory (engram_tables): raising RLIMIT_MEMLOCK to unlimited failed "
                     "(Operation not permitted), so the tasks keep 8 MiB");
}

}  // namespace
}  // namespace ix
