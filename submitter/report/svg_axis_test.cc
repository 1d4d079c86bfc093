#include "submitter/report/svg_axis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ix {
namespace {

using Ticks = std::vector<double>;

std::vector<std::string> Labels(const Axis& a) {
  std::vector<std::string> out;
  for (const double t : a.ticks) out.push_back(a.Label(t));
  return out;
}

TEST(SvgAxis, NiceStepIsOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(NiceStep(0.7), 1);
  EXPECT_DOUBLE_EQ(NiceStep(1.0), 1);
  EXPECT_DOUBLE_EQ(NiceStep(1.2), 2);
  EXPECT_DOUBLE_EQ(NiceStep(2.2), 5);
  EXPECT_DOUBLE_EQ(NiceStep(5.1), 10);
  EXPECT_DOUBLE_EQ(NiceStep(160), 200);
  EXPECT_DOUBLE_EQ(NiceStep(0.03), 0.05);
  EXPECT_DOUBLE_EQ(NiceStep(0), 1);  // nonsense in, something sane out
}

TEST(SvgAxis, LinearAxisCoversTheDataWithNiceTicks) {
  const Axis a = MakeLinearAxis(13, 812, true);
  EXPECT_DOUBLE_EQ(a.lo, 0);
  EXPECT_DOUBLE_EQ(a.hi, 1000);
  EXPECT_EQ(a.ticks, (Ticks{0, 200, 400, 600, 800, 1000}));
  EXPECT_EQ(Labels(a), (std::vector<std::string>{"0", "200", "400", "600", "800", "1000"}));
  const Axis b = MakeLinearAxis(0.31, 0.92, false);
  EXPECT_DOUBLE_EQ(b.lo, 0.2);
  EXPECT_DOUBLE_EQ(b.hi, 1.0);
  EXPECT_EQ(Labels(b), (std::vector<std::string>{"0.2", "0.4", "0.6", "0.8", "1.0"}));
  EXPECT_DOUBLE_EQ(b.Fraction(0.2), 0);
  EXPECT_DOUBLE_EQ(b.Fraction(1.0), 1);
}

TEST(SvgAxis, NoSpreadStillGivesARange) {
  const Axis one = MakeLinearAxis(42, 42, false);
  EXPECT_LT(one.lo, 42);
  EXPECT_GT(one.hi, 42);
  EXPECT_GE(one.ticks.size(), 2u);
  const Axis zero = MakeLinearAxis(0, 0, true);
  EXPECT_DOUBLE_EQ(zero.lo, 0);
  EXPECT_DOUBLE_EQ(zero.hi, 1);
  const Axis from_zero = MakeLinearAxis(5, 5, true);
  EXPECT_DOUBLE_EQ(from_zero.lo, 0);
  EXPECT_GE(from_zero.hi, 5);
  const Axis negative = MakeLinearAxis(-3, -3, false);
  EXPECT_LT(negative.lo, -3);
  EXPECT_GT(negative.hi, -3);
}

TEST(SvgAxis, NonFiniteBoundsGiveTheUnitRange) {
  const Axis a = MakeLinearAxis(std::nan(""), 3, false);
  EXPECT_DOUBLE_EQ(a.lo, 0);
  EXPECT_DOUBLE_EQ(a.hi, 1);
  const Axis b = MakeLog2Axis(0, std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(b.lo, 1);
  EXPECT_DOUBLE_EQ(b.hi, 2);
}

TEST(SvgAxis, Log2AxisTicksArePowersOfTwo) {
  const Axis a = MakeLog2Axis(4, 256);
  EXPECT_TRUE(a.log2);
  EXPECT_EQ(a.ticks, (Ticks{4, 8, 16, 32, 64, 128, 256}));
  EXPECT_DOUBLE_EQ(a.Fraction(16), 2.0 / 6.0);
  const Axis b = MakeLog2Axis(3, 100);  // not powers: widened to them
  EXPECT_DOUBLE_EQ(b.lo, 2);
  EXPECT_DOUBLE_EQ(b.hi, 128);
  EXPECT_EQ(Labels(MakeLog2Axis(1, 8)), (std::vector<std::string>{"1", "2", "4", "8"}));
}

TEST(SvgAxis, Log2AxisOfOneValueReachesAPowerEachWay) {
  const Axis a = MakeLog2Axis(64, 64);
  EXPECT_EQ(a.ticks, (Ticks{32, 64, 128}));
}

TEST(SvgAxis, WideLog2AxisThinsItsTicksAndEndsOnOne) {
  const Axis a = MakeLog2Axis(1, std::ldexp(1.0, 15));
  EXPECT_LE(a.ticks.size(), 10u);
  EXPECT_DOUBLE_EQ(a.ticks.front(), a.lo);
  EXPECT_DOUBLE_EQ(a.ticks.back(), a.hi);
  EXPECT_GE(a.hi, std::ldexp(1.0, 15));
}

}  // namespace
}  // namespace ix
