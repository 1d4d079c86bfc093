#include "random_lengths.h"

#include <gtest/gtest.h>

#include <string>

namespace ixfake::client {
namespace {

// Expected values are numpy 1.24's: np.random.seed(SEED), then
// np.random.randint(int(L * r), L + 1, size=N) for the inputs and the outputs.
TEST(RandomLengths, DrawsWhatNumpyDrawsForTheSameSeed) {
  DrawnLengths d = draw_lengths({1024, 1024, 0.8, 0}, 8);
  EXPECT_EQ(d.input, (std::vector<int>{991, 866, 936, 1011, 886, 1014, 922, 828}));
  EXPECT_EQ(d.output, (std::vector<int>{840, 855, 906, 889, 907, 959, 877, 1012}));
  d = draw_lengths({8192, 1024, 0.5, 42}, 5);
  EXPECT_EQ(d.input, (std::vector<int>{4956, 7868, 7188, 4562, 7540}));
  EXPECT_EQ(d.output, (std::vector<int>{611, 642, 820, 855, 1003}));
  d = draw_lengths({1000, 10, 0.0, 123}, 4);
  EXPECT_EQ(d.input, (std::vector<int>{510, 365, 382, 322}));
  EXPECT_EQ(d.output, (std::vector<int>{2, 6, 1, 3}));
  d = draw_lengths({1024, 8192, 0.8, 4294967295u}, 4);
  EXPECT_EQ(d.input, (std::vector<int>{982, 853, 831, 890}));
  EXPECT_EQ(d.output, (std::vector<int>{8153, 6767, 7059, 7026}));
}

TEST(RandomLengths, ARangeOfOneValueDrawsNothing) {
  // Ratio 1: every length is the nominal one and numpy's state does not
  // move, so the outputs are what they would be with no inputs drawn.
  DrawnLengths d = draw_lengths({1024, 1024, 1.0, 0}, 3);
  EXPECT_EQ(d.input, (std::vector<int>{1024, 1024, 1024}));
  EXPECT_EQ(d.output, (std::vector<int>{1024, 1024, 1024}));
  NumpyLegacyRandom a(7), b(7);
  EXPECT_EQ(a.randint_inclusive(5, 5), 5);
  EXPECT_EQ(a.randint_inclusive(100, 4000), b.randint_inclusive(100, 4000));
}

TEST(RandomLengths, EveryDrawIsWithinTheRange) {
  for (double ratio : {0.0, 0.3, 0.8, 0.99}) {
    NumpyLegacyRandom rng(1);
    const int lower = static_cast<int>(777 * ratio);
    for (int len : sample_uniform(rng, 777, ratio, 2000)) {
      ASSERT_GE(len, lower) << ratio;
      ASSERT_LE(len, 777) << ratio;
    }
  }
}

TEST(RandomLengths, ChecksTheSpec) {
  EXPECT_EQ(std::string(check_length_spec({1024, 1024, 0.8, 0})), "");
  EXPECT_EQ(std::string(check_length_spec({1, 1, 0, 0})), "");
  EXPECT_EQ(std::string(check_length_spec({1, 1, 1, 0})), "");
  EXPECT_NE(std::string(check_length_spec({0, 1, 0.8, 0})), "");
  EXPECT_NE(std::string(check_length_spec({1, 0, 0.8, 0})), "");
  EXPECT_NE(std::string(check_length_spec({1, 1, 1.5, 0})), "");
  EXPECT_NE(std::string(check_length_spec({1, 1, -0.1, 0})), "");
}

}  // namespace
}  // namespace ixfake::client
