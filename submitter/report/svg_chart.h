// XyChart: an XY chart (scatter with optional lines) drawn as one SVG,
// without a library: a title, axis labels with units, nice ticks (log2 on x
// for concurrency), one style per series (marker shape, colour and dash), a
// legend, an optional frontier polyline, and a tooltip on every point.
//
// Markup (what tests and the browser test count): the root is
// <svg class="ix-chart" data-chart="KIND">; each series with a point to draw
// is a <g class="ix-series" data-series="NAME"> holding one element of class
// "ix-point" per drawn point; the frontier is a <g class="ix-frontier">.
// A point is drawn when x and y are finite (and x > 0 on a log2 axis); a
// chart with none says "no data" (and has no series).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "submitter/report/svg_canvas.h"

namespace ix {

// One point: where it is, its tooltip (the marker's <title>) and an
// optional short label drawn beside it ("64" for conc 64).
struct ChartPoint {
  double x = 0, y = 0;
  std::string tooltip;
  std::string label;
};

// One series: its legend name, look, and points (lines join them in this
// order, so give them in the order they should be joined).
struct ChartSeries {
  std::string name;
  SeriesStyle style;
  std::vector<ChartPoint> points;
};

// The whole chart: what it shows and how; `kind` goes into data-chart.
struct XyChart {
  std::string kind;
  std::string title;
  std::string x_label;  // with its unit: "interactivity (tok/s/user)"
  std::string y_label;
  bool log2_x = false;
  bool x_from_zero = true;  // linear axes reach 0 (ignored on a log2 axis)
  bool y_from_zero = true;
  bool lines = true;  // join each series' points
  std::vector<ChartSeries> series;
  std::vector<std::pair<double, double>> frontier;  // (x, y) in order; empty: none
  std::string frontier_name = "Pareto frontier";
  ChartFrame frame;
};

// The chart as one <svg> element (deterministic: same chart, same bytes).
std::string RenderXyChart(const XyChart& chart);

}  // namespace ix
