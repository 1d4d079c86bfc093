#include "submitter/report/report_charts.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "submitter/report/report_sample.h"

namespace ix {
namespace {

using test::Names;
using test::Points;

class ReportCharts : public ::testing::Test, protected test::SampleGroups {};

TEST_F(ReportCharts, GroupsByKeyInOrderOfFirstAppearance) {
  ASSERT_EQ(groups.size(), 4u);  // the fourth, agentic: agentic_charts_test.cc
  EXPECT_EQ(groups[0].key, "dsv41flash-fp4-b300-vllm-1k1k");
  EXPECT_EQ(groups[1].key, test::kOddKey);
  EXPECT_EQ(groups[0].entries.size(), 13u);
  EXPECT_EQ(groups[1].entries.size(), 3u);
  EXPECT_EQ(groups[2].entries.size(), 2u);
  ReportData interleaved;
  interleaved.entries = {data.entries[0], data.entries[14], data.entries[1]};
  const auto g = GroupByConfig(interleaved);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].entries.size(), 2u);
}

TEST_F(ReportCharts, ThroughputHasASeriesPerArmAndAPointPerResult) {
  const XyChart c = ThroughputChart(groups[0]);
  EXPECT_EQ(c.kind, "throughput-interactivity");
  EXPECT_EQ(Names(c), (std::vector<std::string>{"tp4", "tep4", "dep4"}));
  EXPECT_EQ(Points(c), 11u);  // the failed tep4 256 and pending dep4 512 have none
  const ChartPoint& p = c.series[2].points[1];  // dep4 conc 16
  EXPECT_EQ(p.label, "16");
  EXPECT_EQ(p.tooltip.rfind("dep4 \xc2\xb7 conc 16 \xc2\xb7 ", 0), 0u) << p.tooltip;
  EXPECT_NE(p.tooltip.find(" tok/s/gpu \xc2\xb7 "), std::string::npos);
  EXPECT_NE(p.tooltip.find(" tok/s/user"), std::string::npos);
}

TEST_F(ReportCharts, FrontierIsTheUndominatedResultsOfAllArms) {
  const XyChart c = ThroughputChart(groups[0]);
  ASSERT_FALSE(c.frontier.empty());
  std::vector<std::pair<double, double>> all;
  for (const ChartSeries& s : c.series) {
    for (const ChartPoint& p : s.points) all.emplace_back(p.x, p.y);
  }
  for (size_t i = 1; i < c.frontier.size(); ++i) {
    EXPECT_LT(c.frontier[i - 1].first, c.frontier[i].first);
    EXPECT_GT(c.frontier[i - 1].second, c.frontier[i].second);
  }
  for (const auto& [x, y] : all) {
    bool dominated = false;
    for (const auto& [ox, oy] : all) dominated |= ox >= x && oy >= y && (ox > x || oy > y);
    const bool on = std::find(c.frontier.begin(), c.frontier.end(), std::make_pair(x, y)) != c.frontier.end();
    EXPECT_EQ(on, !dominated) << x << "," << y;
  }
}

TEST_F(ReportCharts, TtftHasMeanAndDashedP99PerArmOnALog2Axis) {
  const XyChart c = TtftChart(groups[0]);
  EXPECT_TRUE(c.log2_x);
  EXPECT_EQ(Names(c), (std::vector<std::string>{"tp4 mean", "tp4 p99", "tep4 mean", "tep4 p99", "dep4 mean",
                                                 "dep4 p99"}));
  EXPECT_EQ(Points(c), 22u);
  EXPECT_TRUE(c.series[0].style.dash.empty());
  EXPECT_FALSE(c.series[1].style.dash.empty());
  EXPECT_EQ(c.series[0].style.colour, c.series[1].style.colour);
  EXPECT_NE(c.series[0].style.colour, c.series[2].style.colour);
  EXPECT_EQ(c.series[0].points.front().x, 4);  // conc order
  EXPECT_EQ(c.series[0].points.back().x, 256);
}

TEST_F(ReportCharts, EnergyOnlyForValidPowerAndNoneWithout) {
  const auto c = EnergyChart(groups[0]);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(Names(*c), (std::vector<std::string>{"tp4", "tep4", "dep4"}));
  EXPECT_EQ(Points(*c), 10u);  // dep4 256 has no valid power
  EXPECT_FALSE(EnergyChart(groups[1]).has_value());
  EXPECT_FALSE(EnergyChart(groups[2]).has_value());
}

TEST_F(ReportCharts, DepSessionsGroupPerEntrySeriesPerRank) {
  const auto c = DepSessionsChart(groups[0]);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->groups.size(), 4u);
  EXPECT_EQ(c->series_names, (std::vector<std::string>{"rank 0", "rank 1", "rank 2", "rank 3"}));
  EXPECT_EQ(c->groups[0].label, "conc 4");
  EXPECT_EQ(c->groups[3].values, (std::vector<double>{65, 64, 63, 64}));
  EXPECT_FALSE(DepSessionsChart(groups[1]).has_value());
  EXPECT_FALSE(DepSessionsChart(groups[2]).has_value());  // dep8 failed: not charted
}

TEST_F(ReportCharts, KeysWithoutResultsGiveEmptyCharts) {
  EXPECT_TRUE(ThroughputChart(groups[2]).series.empty());
  EXPECT_TRUE(ThroughputChart(groups[2]).frontier.empty());
  EXPECT_TRUE(TtftChart(groups[2]).series.empty());
}

}  // namespace
}  // namespace ix
