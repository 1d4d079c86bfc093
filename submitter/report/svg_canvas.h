// The pieces every report chart is drawn from: the chart's frame (where the
// plot, its axes and its legend go), series styles (marker shape, colour,
// dash, so a series reads without colour), markers with their tooltip,
// axes with grid and labels, the legend and the "no data" face.
//
// Everything appends SVG to a string; all text passes through EscapeXml and
// all numbers through FormatFixed, so the output is the same bytes for the
// same input. Markup the browser test counts: the root is
// <svg class="ix-chart" data-chart="KIND">, a point is class "ix-point".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "submitter/report/svg_axis.h"

namespace ix {

enum class MarkerShape { kCircle, kSquare, kTriangle, kDiamond, kCross, kTriangleDown, kPlus };

// How one series looks: its marker, colour ("#rrggbb") and line dash (SVG
// stroke-dasharray, "" for solid); a hollow marker is white inside.
struct SeriesStyle {
  MarkerShape shape = MarkerShape::kCircle;
  std::string colour = "#0072b2";
  std::string dash;
  bool hollow = false;
};

// The style of the i-th series: shape, colour (Okabe-Ito, readable with
// colour-blindness) and dash each cycle, so neighbours differ in all three.
SeriesStyle DefaultStyle(size_t i);

// Where a chart's parts go, in SVG user units. The plot is the rectangle
// [left, width - right] x [top, top + plot_height]; x tick labels below it,
// the x axis label `axis_gap` below it, then the legend (legend_rows of 18).
struct ChartFrame {
  int width = 680;
  double left = 76, right = 24, top = 44, plot_height = 300, axis_gap = 40;
  int legend_rows = 0;

  double PlotLeft() const { return left; }
  double PlotRight() const { return width - right; }
  double PlotTop() const { return top; }
  double PlotBottom() const { return top + plot_height; }
  double LegendTop() const { return PlotBottom() + axis_gap + 16; }
  int Height() const { return static_cast<int>(LegendTop()) + legend_rows * 18 + 8; }
  // The SVG x and y of a fraction (0..1) of the plot's width and height
  // (y = 0 at the bottom).
  double X(double fraction) const { return PlotLeft() + fraction * (PlotRight() - PlotLeft()); }
  double Y(double fraction) const { return PlotBottom() - fraction * plot_height; }
};

// One legend entry: a swatch (a short line in the series' dash, with its
// marker when `marker`) and the name. A "band" swatch is the frontier's
// thick translucent line.
struct LegendItem {
  std::string name;
  SeriesStyle style;
  bool marker = true;
  bool band = false;
};

// The number of rows `items` take in `frame`'s width (0 for none).
int LegendRows(const std::vector<LegendItem>& items, const ChartFrame& frame);

// <svg class="ix-chart" data-chart="KIND" ...> with its size, font and an
// aria-label; then the title, centred above the plot. Close with "</svg>".
void AppendChartOpen(std::string& out, std::string_view kind, std::string_view title, const ChartFrame& frame);

// The y axis: grid lines and tick labels for `axis`, and its label
// (rotated, left of the ticks).
void AppendYAxis(std::string& out, const ChartFrame& frame, const Axis& axis, std::string_view label);

// The x axis: vertical grid lines and tick labels for `axis`, and its label.
void AppendXAxis(std::string& out, const ChartFrame& frame, const Axis& axis, std::string_view label);

// The x axis label alone (centred, `axis_gap` below the plot), for charts
// whose x axis is not numeric.
void AppendXLabel(std::string& out, const ChartFrame& frame, std::string_view label);

// The plot's border, drawn last among the axes' parts.
void AppendPlotBorder(std::string& out, const ChartFrame& frame);

// One marker at (cx, cy) with class "ix-point" and a <title> child holding
// `tooltip` (the browser's tooltip).
void AppendMarker(std::string& out, const SeriesStyle& style, double cx, double cy, std::string_view tooltip);

// The legend, `frame.legend_rows` rows from frame.LegendTop().
void AppendLegend(std::string& out, const ChartFrame& frame, const std::vector<LegendItem>& items);

// A chart of type C (XyChart, BarChart) with its names set, as every chart
// starts: `kind` (its CSS class and id stem), title, and the axes' labels
// (y with its unit).
template <class C>
C NamedChart(std::string kind, std::string title, std::string x_label, std::string y_label) {
  C c;
  c.kind = std::move(kind);
  c.title = std::move(title);
  c.x_label = std::move(x_label);
  c.y_label = std::move(y_label);
  return c;
}

// "no data" centred in the plot, for a chart with nothing to draw.
void AppendNoData(std::string& out, const ChartFrame& frame);

// A whole chart with nothing to draw: no legend, a short plot, its border
// and "no data" (every chart type ends this way when it has no point).
std::string RenderEmptyChart(std::string_view kind, std::string_view title, ChartFrame frame);

// `v` as an SVG coordinate (one decimal).
std::string Coord(double v);

}  // namespace ix
