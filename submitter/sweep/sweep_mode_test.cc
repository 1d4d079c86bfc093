#include "submitter/sweep/sweep_mode.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(SweepMode, EveryLabelMeansWhatInferenceXMeans) {
  struct Want {
    const char* name;
    bool trim, canary, fail_fast;
  };
  const Want wants[] = {
      {"sweep-enabled", true, false, false},
      {"full-sweep-enabled", false, true, false},
      {"full-sweep-fail-fast", false, true, true},
      {"full-sweep-fail-fast-no-canary", false, false, true},
      {"non-canary-full-sweep-enabled", false, false, false},
  };
  ASSERT_EQ(AllSweepModes().size(), 5u);
  for (const Want& w : wants) {
    Result<SweepMode> m = ParseSweepMode(w.name);
    ASSERT_TRUE(m.ok()) << w.name << ": " << m.error().message;
    EXPECT_STREQ(SweepModeName(m.value()), w.name);
    const SweepModeTraits t = TraitsOf(m.value());
    EXPECT_EQ(t.trim_conc, w.trim) << w.name;
    EXPECT_EQ(t.canary, w.canary) << w.name;
    EXPECT_EQ(t.fail_fast, w.fail_fast) << w.name;
  }
}

TEST(SweepMode, NamesAndModesRoundTripInTableOrder) {
  const auto& modes = AllSweepModes();
  const auto& names = AllSweepModeNames();
  ASSERT_EQ(modes.size(), names.size());
  for (size_t i = 0; i < modes.size(); ++i) {
    EXPECT_EQ(names[i], SweepModeName(modes[i]));
    EXPECT_EQ(ParseSweepMode(names[i]).value(), modes[i]);
  }
  EXPECT_EQ(names.front(), "sweep-enabled");
}

TEST(SweepMode, UnknownNameListsTheAllowedOnes) {
  for (const char* bad : {"", "full-sweep", "Full-Sweep-Enabled", "sweep-enabled ", "fail-fast"}) {
    Result<SweepMode> m = ParseSweepMode(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.error().message,
              "unknown sweep mode '" + std::string(bad) +
                  "'; expected one of: sweep-enabled, full-sweep-enabled, full-sweep-fail-fast, "
                  "full-sweep-fail-fast-no-canary, non-canary-full-sweep-enabled");
  }
}

}  // namespace
}  // namespace ix
