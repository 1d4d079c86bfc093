#include "submitter/report/agentic_charts.h"

#include <gtest/gtest.h>

#include <cmath>

#include "submitter/report/report_charts.h"
#include "submitter/report/report_sample.h"

namespace ix {
namespace {

using test::Names;
using test::Points;

// The sample's groups: [0] fixed-seq-len, [3] agentic (report_sample.h).
class AgenticCharts : public ::testing::Test, protected test::SampleGroups {
 protected:
  const ConfigGroup& fixed() const { return groups[0]; }
  const ConfigGroup& agentic() const { return groups[3]; }
};

TEST_F(AgenticCharts, SampleHasOneAgenticKey) {
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(agentic().key, test::kAgenticKey);
  EXPECT_TRUE(HasAgentic(agentic()));
  EXPECT_FALSE(HasFixedSeqLen(agentic()));
  EXPECT_FALSE(HasAgentic(fixed()));
}

TEST_F(AgenticCharts, ThroughputHasASeriesPerArmWithTheOffloadTierApart) {
  const XyChart c = AgenticThroughputChart(agentic());
  EXPECT_EQ(c.kind, "agentic-throughput-interactivity");
  EXPECT_EQ(Names(c), (std::vector<std::string>{"tp4", "dep4", "dep4 + cpu offload"}));
  EXPECT_EQ(Points(c), 6u);  // the failed tp4 64 has none
  EXPECT_FALSE(c.frontier.empty());
  EXPECT_TRUE(AgenticThroughputChart(fixed()).series.empty());
}

TEST_F(AgenticCharts, FixedSeqLenChartsLeaveAgenticEntriesOut) {
  ReportData mixed = data;
  for (ReportEntry& e : mixed.entries) e.config_key = "one-key";
  const auto g = GroupByConfig(mixed);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(HasFixedSeqLen(g[0]) && HasAgentic(g[0]));
  EXPECT_EQ(Points(ThroughputChart(g[0])), Points(ThroughputChart(fixed())) + 2);  // + the odd key's tp8
  EXPECT_EQ(Points(AgenticThroughputChart(g[0])), 6u);
  EXPECT_EQ(DepSessionsChart(g[0])->groups.size(), 4u);
}

TEST_F(AgenticCharts, TurnTtftIsEachArmAtItsHighestConc) {
  const XyChart c = TurnTtftChart(agentic());
  EXPECT_EQ(c.kind, "agentic-ttft-turn");
  EXPECT_EQ(Names(c), (std::vector<std::string>{"tp4 \xc2\xb7 conc 32", "dep4 \xc2\xb7 conc 64",
                                                 "dep4 + cpu offload \xc2\xb7 conc 64"}));
  EXPECT_EQ(Points(c), 30u);
  const ChartPoint& p = c.series[0].points[3];
  EXPECT_EQ(p.x, 3);
  EXPECT_NE(p.tooltip.find("turn 3 \xc2\xb7 p50 TTFT "), std::string::npos) << p.tooltip;
  EXPECT_NE(p.tooltip.find(" requests \xc2\xb7 entry 19"), std::string::npos) << p.tooltip;
  EXPECT_TRUE(TurnTtftChart(fixed()).series.empty());
}

TEST_F(AgenticCharts, CacheHitHasGpuPerArmAndCpuWhereOffloaded) {
  const auto c = CacheHitChart(agentic());
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->log2_x);
  EXPECT_EQ(Names(*c), (std::vector<std::string>{"tp4 GPU", "dep4 GPU", "dep4 + cpu offload GPU",
                                                  "dep4 + cpu offload CPU"}));
  EXPECT_EQ(Points(*c), 7u);
  EXPECT_NEAR(c->series[0].points[0].y, 73.4, 1e-9);  // percent
  EXPECT_EQ(c->series[2].style.colour, c->series[3].style.colour);
  EXPECT_TRUE(c->series[3].style.hollow);
  EXPECT_FALSE(c->series[3].style.dash.empty());
  EXPECT_FALSE(CacheHitChart(fixed()).has_value());
}

TEST_F(AgenticCharts, KvUsageIsAChartPerArmWithALinePerEntry) {
  const auto charts = KvUsageCharts(agentic());
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(charts[1].kind, "agentic-kv-usage");
  EXPECT_EQ(Names(charts[1]), (std::vector<std::string>{"conc 8", "conc 32", "conc 64"}));
  EXPECT_EQ(charts[0].series.size() + charts[2].series.size(), 3u);
  EXPECT_EQ(charts[1].series[0].points.size(), 12u);
  EXPECT_NE(charts[1].series[0].points[1].tooltip.find("30\xe2\x80\x93" "60 s"), std::string::npos)
      << charts[1].series[0].points[1].tooltip;
  EXPECT_NE(charts[1].series[0].points[1].tooltip.find("busiest of 4 engines"), std::string::npos);
  EXPECT_TRUE(KvUsageCharts(fixed()).empty());
}

TEST_F(AgenticCharts, DpRanksGiveSessionAndHitRateBars) {
  const auto sessions = DpSessionsChart(agentic());
  ASSERT_TRUE(sessions.has_value());
  EXPECT_EQ(sessions->groups.size(), 3u);  // the offload entry's sessions are null
  EXPECT_EQ(sessions->series_names, (std::vector<std::string>{"rank 0", "rank 1", "rank 2", "rank 3"}));
  EXPECT_EQ(sessions->groups[2].values, (std::vector<double>{17, 16, 16, 16}));  // dep4 conc 64
  const auto hits = DpHitRateChart(agentic());
  ASSERT_TRUE(hits.has_value());
  EXPECT_EQ(hits->groups.size(), 4u);
  EXPECT_EQ(hits->groups[3].label, "dep4 + cpu offload \xc2\xb7 64");
  EXPECT_NEAR(hits->groups[0].values[1], 84.0, 1e-9);
  EXPECT_NE(hits->groups[0].tooltips[1].find("84.0% prefix-cache hits"), std::string::npos);
  EXPECT_FALSE(DpSessionsChart(fixed()).has_value());
  EXPECT_FALSE(DpHitRateChart(fixed()).has_value());
}

TEST_F(AgenticCharts, MissingRanksLeaveAGapNotAShift) {
  ReportEntry& dep = data.entries[20];  // dep4 conc 8
  ASSERT_EQ(dep.arm, "dep4");
  dep.agentic.dp_ranks.erase(dep.agentic.dp_ranks.begin() + 1);
  const auto sessions = DpSessionsChart(agentic());
  ASSERT_TRUE(sessions.has_value());
  const std::vector<double>& v = sessions->groups[0].values;
  ASSERT_EQ(v.size(), 4u);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 2);
}

TEST(AgenticText, PercentHasOneDecimal) {
  EXPECT_EQ(FormatPercent(0.8126), "81.3%");
  EXPECT_EQ(FormatPercent(0), "0.0%");
}

}  // namespace
}  // namespace ix
