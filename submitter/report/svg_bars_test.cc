#include "submitter/report/svg_bars.h"

#include <gtest/gtest.h>

#include <cmath>

#include "submitter/report/report_sample.h"

namespace ix {
namespace {

using test::CountOf;

BarChart Ranks() {
  BarChart c = NamedChart<BarChart>("bars", "Sessions", "entries", "sessions (count)");
  c.series_names = {"rank 0", "rank 1", "rank 2"};
  c.bar_labels = {"0", "1", "2"};
  c.groups.push_back({"conc 4", {2, 1, 1}, {"g0 r0", "g0 r1", "g0 r2"}});
  c.groups.push_back({"conc 64", {20, 22}, {}});  // fewer ranks, no tooltips
  return c;
}

TEST(SvgBars, OneSeriesPerRankAndOneBarPerValue) {
  const std::string svg = RenderBarChart(Ranks());
  EXPECT_EQ(svg.rfind("<svg class=\"ix-chart\" data-chart=\"bars\"", 0), 0u);
  EXPECT_EQ(CountOf(svg, "class=\"ix-series\""), 3u);
  EXPECT_EQ(CountOf(svg, "<rect class=\"ix-point\""), 5u);
  EXPECT_NE(svg.find("<title>g0 r1</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>22.0</title>"), std::string::npos);  // the value when no tooltip
  EXPECT_EQ(CountOf(svg, "class=\"ix-mean\""), 2u);
  EXPECT_NE(svg.find("<title>mean 21.0</title>"), std::string::npos);
  EXPECT_NE(svg.find(">conc 64</text>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

TEST(SvgBars, SkipsBadValuesAndSaysNoDataWithoutAny) {
  BarChart c = Ranks();
  c.groups = {{"g", {std::nan(""), -1}, {}}};
  const std::string svg = RenderBarChart(c);
  EXPECT_NE(svg.find(">no data</text>"), std::string::npos);
  EXPECT_EQ(CountOf(svg, "class=\"ix-point\""), 0u);
  c.groups.clear();
  EXPECT_NE(RenderBarChart(c).find(">no data</text>"), std::string::npos);
}

TEST(SvgBars, ManyBarsWidenTheChart) {
  BarChart c = Ranks();
  for (int g = 0; g < 40; ++g) c.groups.push_back({"g" + std::to_string(g), {1, 2, 3}, {}});
  const std::string svg = RenderBarChart(c);
  const size_t at = svg.find("width=\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::stoi(svg.substr(at + 7)), 42 * 3 * 12);
}

TEST(SvgBars, EscapesNamesAndIsDeterministic) {
  BarChart c = Ranks();
  c.series_names[0] = "r<0>";
  c.groups[0].label = "a&b";
  const std::string svg = RenderBarChart(c);
  EXPECT_NE(svg.find("data-series=\"r&lt;0&gt;\""), std::string::npos);
  EXPECT_NE(svg.find(">a&amp;b</text>"), std::string::npos);
  EXPECT_EQ(svg, RenderBarChart(c));
}

}  // namespace
}  // namespace ix
