#include "submitter/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "submitter/report/report_text.h"

namespace ix {
namespace {

constexpr const char* kFrontierColour = "#555555";

bool Drawable(const XyChart& chart, double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && (!chart.log2_x || x > 0);
}

// The data's bounds over every drawable point and frontier vertex; false
// when there is none.
struct Bounds {
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -std::numeric_limits<double>::infinity();
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = -std::numeric_limits<double>::infinity();
  bool any = false;
  void Add(double x, double y) {
    x_min = std::min(x_min, x), x_max = std::max(x_max, x);
    y_min = std::min(y_min, y), y_max = std::max(y_max, y);
    any = true;
  }
};

Bounds DataBounds(const XyChart& chart) {
  Bounds b;
  for (const ChartSeries& s : chart.series) {
    for (const ChartPoint& p : s.points) {
      if (Drawable(chart, p.x, p.y)) b.Add(p.x, p.y);
    }
  }
  for (const auto& [x, y] : chart.frontier) {
    if (Drawable(chart, x, y)) b.Add(x, y);
  }
  return b;
}

bool HasDrawable(const XyChart& chart, const ChartSeries& s) {
  return std::any_of(s.points.begin(), s.points.end(),
                     [&](const ChartPoint& p) { return Drawable(chart, p.x, p.y); });
}

// Maps data to SVG coordinates through the two axes.
struct Mapper {
  const ChartFrame& frame;
  const Axis& x_axis;
  const Axis& y_axis;
  double X(double x) const { return frame.X(x_axis.Fraction(x)); }
  double Y(double y) const { return frame.Y(y_axis.Fraction(y)); }
};

void AppendFrontier(std::string& out, const XyChart& chart, const Mapper& map) {
  std::string points;
  for (const auto& [x, y] : chart.frontier) {
    if (!Drawable(chart, x, y)) continue;
    if (!points.empty()) points += ' ';
    points += Coord(map.X(x)) + "," + Coord(map.Y(y));
  }
  if (points.empty()) return;
  out += "<g class=\"ix-frontier\"><polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + kFrontierColour +
         "\" stroke-width=\"8\" stroke-opacity=\"0.3\" stroke-linejoin=\"round\" stroke-linecap=\"round\"><title>" +
         EscapeXml(chart.frontier_name) + "</title></polyline></g>";
}

void AppendSeries(std::string& out, const XyChart& chart, const ChartSeries& s, const Mapper& map) {
  out += "<g class=\"ix-series\" data-series=\"" + EscapeXml(s.name) + "\">";
  std::string line;
  size_t drawn = 0;
  for (const ChartPoint& p : s.points) {
    if (!Drawable(chart, p.x, p.y)) continue;
    if (!line.empty()) line += ' ';
    line += Coord(map.X(p.x)) + "," + Coord(map.Y(p.y));
    ++drawn;
  }
  if (chart.lines && drawn >= 2) {
    out += "<polyline points=\"" + line + "\" fill=\"none\" stroke=\"" + s.style.colour + "\" stroke-width=\"1.8\"";
    if (!s.style.dash.empty()) out += " stroke-dasharray=\"" + s.style.dash + "\"";
    out += "/>";
  }
  for (const ChartPoint& p : s.points) {
    if (!Drawable(chart, p.x, p.y)) continue;
    AppendMarker(out, s.style, map.X(p.x), map.Y(p.y), p.tooltip);
    if (!p.label.empty()) {
      out += "<text class=\"ix-label\" x=\"" + Coord(map.X(p.x) + 7) + "\" y=\"" + Coord(map.Y(p.y) - 7) +
             "\" font-size=\"10\" fill=\"#555555\">" + EscapeXml(p.label) + "</text>";
    }
  }
  out += "</g>";
}

std::vector<LegendItem> Legend(const XyChart& chart) {
  std::vector<LegendItem> items;
  for (const ChartSeries& s : chart.series) {
    if (HasDrawable(chart, s)) items.push_back({s.name, s.style, true, false});
  }
  const bool frontier = std::any_of(chart.frontier.begin(), chart.frontier.end(),
                                    [&](const auto& p) { return Drawable(chart, p.first, p.second); });
  if (frontier) {
    SeriesStyle band;
    band.colour = kFrontierColour;
    items.push_back({chart.frontier_name, band, false, true});
  }
  return items;
}

}  // namespace

std::string RenderXyChart(const XyChart& chart) {
  std::string out;
  ChartFrame frame = chart.frame;
  const Bounds b = DataBounds(chart);
  if (!b.any) return RenderEmptyChart(chart.kind, chart.title, frame);
  const Axis x_axis = chart.log2_x ? MakeLog2Axis(b.x_min, b.x_max) : MakeLinearAxis(b.x_min, b.x_max, chart.x_from_zero);
  const Axis y_axis = MakeLinearAxis(b.y_min, b.y_max, chart.y_from_zero);
  const std::vector<LegendItem> legend = Legend(chart);
  frame.legend_rows = LegendRows(legend, frame);
  const Mapper map{frame, x_axis, y_axis};

  AppendChartOpen(out, chart.kind, chart.title, frame);
  AppendYAxis(out, frame, y_axis, chart.y_label);
  AppendXAxis(out, frame, x_axis, chart.x_label);
  AppendPlotBorder(out, frame);
  AppendFrontier(out, chart, map);
  for (const ChartSeries& s : chart.series) {
    if (HasDrawable(chart, s)) AppendSeries(out, chart, s, map);
  }
  AppendLegend(out, frame, legend);
  return out + "</svg>";
}

}  // namespace ix
