#include "submitter/report/svg_bars.h"

#include <algorithm>
#include <cmath>

#include "submitter/report/report_text.h"

namespace ix {
namespace {

constexpr double kMinBarWidth = 12;
constexpr double kGroupPadding = 16;

bool Drawable(double v) { return std::isfinite(v) && v >= 0; }

size_t SeriesCount(const BarChart& chart) {
  size_t n = chart.series_names.size();
  for (const BarGroup& g : chart.groups) n = std::max(n, g.values.size());
  return n;
}

std::string SeriesName(const BarChart& chart, size_t i) {
  return i < chart.series_names.size() ? chart.series_names[i] : "series " + std::to_string(i);
}

SeriesStyle BarStyle(size_t i) {
  SeriesStyle style = DefaultStyle(i);
  style.shape = MarkerShape::kSquare;
  style.dash.clear();
  return style;
}

// The bars' layout across the plot: each group an equal slot, each bar an
// equal share of the slot less its padding.
struct BarLayout {
  double group_width = 0, padding = 0, bar_width = 0;
  double GroupLeft(const ChartFrame& f, size_t g) const { return f.PlotLeft() + static_cast<double>(g) * group_width; }
  double BarLeft(const ChartFrame& f, size_t g, size_t i) const {
    return GroupLeft(f, g) + padding + static_cast<double>(i) * bar_width;
  }
};

BarLayout Layout(const BarChart& chart, const ChartFrame& frame, size_t n_series) {
  BarLayout l;
  l.group_width = (frame.PlotRight() - frame.PlotLeft()) / static_cast<double>(chart.groups.size());
  l.padding = std::min(kGroupPadding / 2, l.group_width * 0.1);
  l.bar_width = (l.group_width - 2 * l.padding) / static_cast<double>(n_series);
  return l;
}

void AppendLabels(std::string& out, const BarChart& chart, const ChartFrame& frame, const BarLayout& l) {
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    const BarGroup& group = chart.groups[g];
    if (l.bar_width >= 9) {
      for (size_t i = 0; i < group.values.size() && i < chart.bar_labels.size(); ++i) {
        out += "<text x=\"" + Coord(l.BarLeft(frame, g, i) + l.bar_width / 2) + "\" y=\"" +
               Coord(frame.PlotBottom() + 12) + "\" text-anchor=\"middle\" font-size=\"9\" fill=\"#555555\">" +
               EscapeXml(chart.bar_labels[i]) + "</text>";
      }
    }
    out += "<text x=\"" + Coord(l.GroupLeft(frame, g) + l.group_width / 2) + "\" y=\"" +
           Coord(frame.PlotBottom() + 28) + "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333333\">" +
           EscapeXml(group.label) + "</text>";
  }
}

void AppendSeries(std::string& out, const BarChart& chart, const ChartFrame& frame, const Axis& y_axis,
                  const BarLayout& l, size_t i) {
  const SeriesStyle style = BarStyle(i);
  out += "<g class=\"ix-series\" data-series=\"" + EscapeXml(SeriesName(chart, i)) + "\">";
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    const BarGroup& group = chart.groups[g];
    if (i >= group.values.size() || !Drawable(group.values[i])) continue;
    const double top = frame.Y(y_axis.Fraction(group.values[i]));
    out += "<rect class=\"ix-point\" x=\"" + Coord(l.BarLeft(frame, g, i) + 1) + "\" y=\"" + Coord(top) +
           "\" width=\"" + Coord(std::max(1.0, l.bar_width - 2)) + "\" height=\"" + Coord(frame.PlotBottom() - top) +
           "\" fill=\"" + style.colour + "\" stroke=\"#333333\" stroke-width=\"0.6\"><title>" +
           EscapeXml(i < group.tooltips.size() ? group.tooltips[i] : FormatSignificant(group.values[i])) +
           "</title></rect>";
  }
  out += "</g>";
}

void AppendMeans(std::string& out, const BarChart& chart, const ChartFrame& frame, const Axis& y_axis,
                 const BarLayout& l) {
  out += "<g class=\"ix-means\">";
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    double sum = 0;
    size_t n = 0;
    for (const double v : chart.groups[g].values) {
      if (Drawable(v)) sum += v, ++n;
    }
    if (n == 0) continue;
    const double mean = sum / static_cast<double>(n);
    const std::string y = Coord(frame.Y(y_axis.Fraction(mean)));
    out += "<line class=\"ix-mean\" x1=\"" + Coord(l.GroupLeft(frame, g) + l.padding / 2) + "\" x2=\"" +
           Coord(l.GroupLeft(frame, g) + l.group_width - l.padding / 2) + "\" y1=\"" + y + "\" y2=\"" + y +
           "\" stroke=\"#000000\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"><title>mean " +
           FormatSignificant(mean) + "</title></line>";
  }
  out += "</g>";
}

}  // namespace

std::string RenderBarChart(const BarChart& chart) {
  std::string out;
  ChartFrame frame = chart.frame;
  frame.axis_gap = std::max(frame.axis_gap, 48.0);
  const size_t n_series = SeriesCount(chart);
  double y_max = 0;
  std::vector<bool> series_drawn(n_series, false);
  for (const BarGroup& g : chart.groups) {
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (Drawable(g.values[i])) y_max = std::max(y_max, g.values[i]), series_drawn[i] = true;
    }
  }
  if (std::none_of(series_drawn.begin(), series_drawn.end(), [](bool b) { return b; })) {
    return RenderEmptyChart(chart.kind, chart.title, frame);
  }
  // Wide enough for every bar; a count axis reaches at least 5 so that
  // its ticks stay whole numbers.
  const double needed = frame.left + frame.right +
                        static_cast<double>(chart.groups.size()) *
                            (static_cast<double>(n_series) * kMinBarWidth + kGroupPadding);
  frame.width = std::max(frame.width, static_cast<int>(std::ceil(needed)));
  const Axis y_axis = MakeLinearAxis(0, std::max(y_max, 5.0), true);
  std::vector<LegendItem> legend;
  for (size_t i = 0; i < n_series; ++i) {
    if (series_drawn[i]) legend.push_back({SeriesName(chart, i), BarStyle(i), true, false});
  }
  if (chart.mean_lines) legend.push_back({"mean of the group", SeriesStyle{MarkerShape::kCircle, "#000000", "4 3", false}, false, false});
  frame.legend_rows = LegendRows(legend, frame);
  const BarLayout layout = Layout(chart, frame, n_series);

  AppendChartOpen(out, chart.kind, chart.title, frame);
  AppendYAxis(out, frame, y_axis, chart.y_label);
  AppendXLabel(out, frame, chart.x_label);
  AppendLabels(out, chart, frame, layout);
  for (size_t i = 0; i < n_series; ++i) {
    if (series_drawn[i]) AppendSeries(out, chart, frame, y_axis, layout, i);
  }
  if (chart.mean_lines) AppendMeans(out, chart, frame, y_axis, layout);
  AppendPlotBorder(out, frame);
  AppendLegend(out, frame, legend);
  return out + "</svg>";
}

}  // namespace ix
