#include "submitter/report/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>

#include "submitter/report/report_sample.h"

namespace ix {
namespace {

using test::CountOf;

XyChart TwoSeries() {
  XyChart c = NamedChart<XyChart>("k", "T", "x (tok/s/user)", "y (tok/s/GPU)");
  c.series.push_back({"a", DefaultStyle(0), {{1, 10, "a one", "1"}, {2, 20, "a two", "2"}, {3, 15, "a three", "4"}}});
  c.series.push_back({"b", DefaultStyle(1), {{1.5, 12, "b one", ""}, {2.5, 5, "b two", ""}}});
  return c;
}

// No NaN, infinity or "-nan" may reach the SVG.
void ExpectFiniteNumbers(const std::string& svg) {
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("\xe2\x80\x94"), std::string::npos) << svg;  // FormatFixed's no-value
}

TEST(SvgChart, DrawsOneGroupPerSeriesAndOneMarkerPerPoint) {
  const std::string svg = RenderXyChart(TwoSeries());
  EXPECT_EQ(svg.rfind("<svg class=\"ix-chart\" data-chart=\"k\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
  EXPECT_EQ(CountOf(svg, "class=\"ix-series\""), 2u);
  EXPECT_EQ(CountOf(svg, "data-series=\"a\""), 1u);
  EXPECT_EQ(CountOf(svg, "class=\"ix-point\""), 5u);
  EXPECT_EQ(CountOf(svg, "<polyline"), 2u);  // lines on, no frontier
  EXPECT_EQ(CountOf(svg, "class=\"ix-frontier\""), 0u);
  test::ExpectHas(svg, {"<title>a two</title>", ">x (tok/s/user)</text>", ">y (tok/s/GPU)</text>"});
  EXPECT_EQ(CountOf(svg, "class=\"ix-label\""), 3u);  // only a's points have labels
  ExpectFiniteNumbers(svg);
}

TEST(SvgChart, SeriesDifferInShapeColourAndDash) {
  const SeriesStyle a = DefaultStyle(0), b = DefaultStyle(1), c = DefaultStyle(2);
  EXPECT_NE(a.shape, b.shape);
  EXPECT_NE(a.colour, b.colour);
  EXPECT_NE(a.dash, b.dash);
  EXPECT_NE(b.dash, c.dash);
  const std::string svg = RenderXyChart(TwoSeries());
  EXPECT_EQ(CountOf(svg, "<circle class=\"ix-point\""), 3u);  // series a: circles
  EXPECT_EQ(CountOf(svg, "<path class=\"ix-point\""), 2u);    // series b: squares
  EXPECT_EQ(CountOf(svg, "stroke-dasharray=\"7 4\""), 2u);    // b's line and its legend swatch
}

TEST(SvgChart, EscapesEveryText) {
  XyChart c = TwoSeries();
  c.kind = "k\"x";
  c.title = "<T>";
  c.x_label = "a&b";
  c.series[0].name = "tp4 <\"'&>";
  c.series[0].points[0].tooltip = "<script>alert(1)</script>";
  c.series[0].points[0].label = "<b>";
  const std::string svg = RenderXyChart(c);
  test::ExpectLacks(svg, {"<script", "<b>", "<T>"});
  test::ExpectHas(svg, {"data-chart=\"k&quot;x\"",
                        "data-series=\"tp4 &lt;&quot;&#39;&amp;&gt;\"",
                        "&lt;script&gt;alert(1)&lt;/script&gt;",
                        ">a&amp;b<"});
}

TEST(SvgChart, EmptyChartSaysNoData) {
  XyChart c;
  c.kind = "empty";
  for (const XyChart& chart : {c, [&] {
                                 XyChart nans = c;
                                 nans.series.push_back({"s", DefaultStyle(0), {{std::nan(""), 1, "", ""}}});
                                 return nans;
                               }()}) {
    const std::string svg = RenderXyChart(chart);
    EXPECT_NE(svg.find(">no data</text>"), std::string::npos);
    EXPECT_EQ(CountOf(svg, "class=\"ix-series\""), 0u);
    EXPECT_EQ(CountOf(svg, "class=\"ix-point\""), 0u);
    EXPECT_NE(svg.find("data-chart=\"empty\""), std::string::npos);
    ExpectFiniteNumbers(svg);
  }
}

TEST(SvgChart, OnePointOrEqualValuesGiveASaneAxis) {
  XyChart one;
  one.kind = "one";
  one.series.push_back({"s", DefaultStyle(0), {{5, 5, "p", ""}}});
  XyChart equal = one;
  equal.x_from_zero = equal.y_from_zero = false;
  equal.series[0].points.push_back({5, 5, "q", ""});
  XyChart zeros = one;
  zeros.series[0].points = {{0, 0, "z", ""}, {0, 0, "z", ""}};
  for (const XyChart& chart : {one, equal, zeros}) {
    const std::string svg = RenderXyChart(chart);
    EXPECT_EQ(svg.find("no data"), std::string::npos);
    EXPECT_EQ(CountOf(svg, "class=\"ix-point\""), chart.series[0].points.size());
    ExpectFiniteNumbers(svg);
  }
}

TEST(SvgChart, Log2AxisSkipsPointsAtOrBelowZero) {
  XyChart c;
  c.kind = "log";
  c.log2_x = true;
  c.series.push_back({"s", DefaultStyle(0), {{0, 1, "zero", ""}, {1, 2, "", ""}, {512, 3, "", ""}, {-4, 1, "", ""}}});
  const std::string svg = RenderXyChart(c);
  EXPECT_EQ(CountOf(svg, "class=\"ix-point\""), 2u);
  EXPECT_NE(svg.find(">512</text>"), std::string::npos);
  EXPECT_NE(svg.find(">64</text>"), std::string::npos);
  ExpectFiniteNumbers(svg);
}

TEST(SvgChart, FrontierIsItsOwnGroupWithALegendEntry) {
  XyChart c = TwoSeries();
  c.frontier = {{1, 12}, {2, 20}};
  const std::string svg = RenderXyChart(c);
  EXPECT_EQ(CountOf(svg, "class=\"ix-frontier\""), 1u);
  EXPECT_EQ(CountOf(svg, "class=\"ix-series\""), 2u);  // not a series
  EXPECT_NE(svg.find(">Pareto frontier</text>"), std::string::npos);
  c.lines = false;
  EXPECT_EQ(CountOf(RenderXyChart(c), "<polyline"), 1u);  // the frontier only
}

TEST(SvgChart, OutputIsDeterministic) {
  EXPECT_EQ(RenderXyChart(TwoSeries()), RenderXyChart(TwoSeries()));
}

TEST(SvgChart, LegendWrapsAndGrowsTheChart) {
  XyChart c = TwoSeries();
  const int one_row = [&] {
    ChartFrame f = c.frame;
    return f.Height();
  }();
  for (int i = 0; i < 12; ++i) {
    c.series.push_back({"a rather long series name " + std::to_string(i), DefaultStyle(2 + i), {{1, 1, "", ""}}});
  }
  const std::string svg = RenderXyChart(c);
  const size_t at = svg.find("height=\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stoi(svg.substr(at + 8)), one_row + 18 * 3);
}

}  // namespace
}  // namespace ix
