#include "submitter/report/pareto.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ix {
namespace {

using Idx = std::vector<size_t>;

TEST(Pareto, KeepsOnlyPointsNoOtherDominates) {
  //            0        1         2        3        4
  const std::vector<ParetoPoint> p = {{1, 10}, {2, 8}, {1.5, 7}, {3, 2}, {2, 9}};
  // 1 is dominated by 4 (same x, more y); 2 by 4 (more x and y).
  EXPECT_EQ(ParetoFrontier(p), (Idx{0, 4, 3}));
}

TEST(Pareto, EmptyAndSingle) {
  EXPECT_EQ(ParetoFrontier({}), Idx{});
  EXPECT_EQ(ParetoFrontier({{5, 5}}), Idx{0});
}

TEST(Pareto, OnePointBestInBothDominatesAll) {
  EXPECT_EQ(ParetoFrontier({{1, 1}, {2, 3}, {10, 10}, {0.5, 11}}), (Idx{3, 2}));
  EXPECT_EQ(ParetoFrontier({{1, 1}, {10, 10}, {2, 3}}), Idx{1});
}

TEST(Pareto, EqualPointsAreBothOnIt) {
  EXPECT_EQ(ParetoFrontier({{2, 2}, {1, 3}, {2, 2}}), (Idx{1, 0, 2}));
  // Same y, less x: dominated.
  EXPECT_EQ(ParetoFrontier({{1, 2}, {2, 2}}), Idx{1});
}

TEST(Pareto, NonFinitePointsAreIgnored) {
  EXPECT_EQ(ParetoFrontier({{std::nan(""), 100}, {1, 1}, {INFINITY, 2}}), Idx{1});
}

// Against the definition, brute force, on deterministic pseudo-random sets
// with many ties (small integer coordinates).
TEST(Pareto, MatchesTheDefinition) {
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<double>((seed >> 16) % 12);
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<ParetoPoint> p(static_cast<size_t>(round % 25));
    for (ParetoPoint& q : p) q = {next(), next()};
    Idx expected;
    for (size_t i = 0; i < p.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < p.size(); ++j) {
        dominated |= p[j].x >= p[i].x && p[j].y >= p[i].y && (p[j].x > p[i].x || p[j].y > p[i].y);
      }
      if (!dominated) expected.push_back(i);
    }
    std::sort(expected.begin(), expected.end(),
              [&](size_t a, size_t b) { return p[a].x != p[b].x ? p[a].x < p[b].x : a < b; });
    ASSERT_EQ(ParetoFrontier(p), expected) << "round " << round;
  }
}

}  // namespace
}  // namespace ix
