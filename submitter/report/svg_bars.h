// BarChart: grouped bars drawn as one SVG: a group per category (a sweep
// entry), a bar per series within it (a DP rank), a dashed line at each
// group's mean, rank labels under the bars, a legend and a tooltip on every
// bar. Same markup as XyChart: <svg class="ix-chart" data-chart="KIND">, a
// <g class="ix-series" data-series="NAME"> per series with one class
// "ix-point" <rect> per bar it has; no bars at all says "no data".
#pragma once

#include <string>
#include <vector>

#include "submitter/report/svg_canvas.h"

namespace ix {

// One group: its label under the axis, and the value (and tooltip) of
// series 0, 1, ... in it; a group may have fewer values than there are
// series (an entry with fewer ranks). Non-finite or negative values are
// not drawn.
struct BarGroup {
  std::string label;
  std::vector<double> values;
  std::vector<std::string> tooltips;  // same length as values, or empty
};

// The chart; bar i of every group belongs to series_names[i], whose short
// name (bar_labels[i], "0", "1", ...) is written under each bar when the
// bars are wide enough.
struct BarChart {
  std::string kind;
  std::string title;
  std::string x_label;
  std::string y_label;  // with its unit
  std::vector<std::string> series_names;
  std::vector<std::string> bar_labels;
  std::vector<BarGroup> groups;
  bool mean_lines = true;
  ChartFrame frame;
};

// The chart as one <svg> element; wider than frame.width when the bars
// need it (at least 12 units a bar). Deterministic.
std::string RenderBarChart(const BarChart& chart);

}  // namespace ix
