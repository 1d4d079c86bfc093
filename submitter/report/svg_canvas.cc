#include "submitter/report/svg_canvas.h"

#include <algorithm>
#include <array>

#include "submitter/report/report_text.h"

namespace ix {
namespace {

// Okabe-Ito without its yellow (too faint on white), and black.
constexpr std::array<const char*, 7> kColours = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                                 "#e69f00", "#56b4e9", "#000000"};
constexpr std::array<MarkerShape, 7> kShapes = {MarkerShape::kCircle,  MarkerShape::kSquare,
                                                MarkerShape::kTriangle, MarkerShape::kDiamond,
                                                MarkerShape::kCross,    MarkerShape::kTriangleDown,
                                                MarkerShape::kPlus};
constexpr std::array<const char*, 3> kDashes = {"", "7 4", "2 3"};
constexpr double kMarkerSize = 4.5;
constexpr double kLegendRowHeight = 18;
constexpr double kSwatchWidth = 28;

// Roughly how wide `s` is at the legend's 12-unit font: code points (not
// bytes) times an average glyph width; the layout only needs "about".
double TextWidth(std::string_view s) {
  double n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80 ? 1 : 0;
  return n * 6.6;
}

// The SVG path of a marker shape at (cx, cy) (not for circles).
std::string ShapePath(MarkerShape shape, double cx, double cy) {
  const double s = kMarkerSize;
  auto p = [](double x, double y) { return Coord(x) + " " + Coord(y); };
  switch (shape) {
    case MarkerShape::kSquare:
      return "M" + p(cx - s * 0.9, cy - s * 0.9) + "H" + Coord(cx + s * 0.9) + "V" + Coord(cy + s * 0.9) + "H" +
             Coord(cx - s * 0.9) + "Z";
    case MarkerShape::kTriangle:
      return "M" + p(cx, cy - s * 1.2) + "L" + p(cx + s * 1.1, cy + s * 0.8) + "L" + p(cx - s * 1.1, cy + s * 0.8) + "Z";
    case MarkerShape::kTriangleDown:
      return "M" + p(cx, cy + s * 1.2) + "L" + p(cx + s * 1.1, cy - s * 0.8) + "L" + p(cx - s * 1.1, cy - s * 0.8) + "Z";
    case MarkerShape::kDiamond:
      return "M" + p(cx, cy - s * 1.25) + "L" + p(cx + s * 1.25, cy) + "L" + p(cx, cy + s * 1.25) + "L" +
             p(cx - s * 1.25, cy) + "Z";
    case MarkerShape::kCross:
      return "M" + p(cx - s, cy - s) + "L" + p(cx + s, cy + s) + "M" + p(cx - s, cy + s) + "L" + p(cx + s, cy - s);
    case MarkerShape::kPlus:
      return "M" + p(cx - s * 1.2, cy) + "H" + Coord(cx + s * 1.2) + "M" + p(cx, cy - s * 1.2) + "V" +
             Coord(cy + s * 1.2);
    case MarkerShape::kCircle:
      break;
  }
  return "";
}

// A marker element; with a class and a tooltip for a data point, without
// either for a legend swatch (which the browser test must not count).
void AppendMarkerElement(std::string& out, const SeriesStyle& style, double cx, double cy, std::string_view cls,
                         std::string_view tooltip) {
  const bool stroked_only = style.shape == MarkerShape::kCross || style.shape == MarkerShape::kPlus;
  const std::string fill = stroked_only ? "none" : style.hollow ? "#ffffff" : style.colour;
  const std::string paint = " fill=\"" + fill + "\" stroke=\"" + style.colour + "\" stroke-width=\"" +
                            (stroked_only ? "2.2" : "1.6") + "\"";
  const std::string class_attr = cls.empty() ? "" : " class=\"" + std::string(cls) + "\"";
  std::string open;
  std::string close;
  if (style.shape == MarkerShape::kCircle) {
    open = "<circle" + class_attr + " cx=\"" + Coord(cx) + "\" cy=\"" + Coord(cy) + "\" r=\"" + Coord(kMarkerSize) +
           "\"" + paint;
    close = "</circle>";
  } else {
    open = "<path" + class_attr + " d=\"" + ShapePath(style.shape, cx, cy) + "\"" + paint;
    close = "</path>";
  }
  if (tooltip.empty()) {
    out += open + "/>";
  } else {
    out += open + "><title>" + EscapeXml(tooltip) + "</title>" + close;
  }
}

// Where each legend item goes: (x, row), wrapping at the plot's width.
std::vector<std::pair<double, int>> LegendLayout(const std::vector<LegendItem>& items, const ChartFrame& frame) {
  std::vector<std::pair<double, int>> at;
  double x = frame.PlotLeft();
  int row = 0;
  for (const LegendItem& item : items) {
    const double w = kSwatchWidth + 6 + TextWidth(item.name) + 18;
    if (x > frame.PlotLeft() && x + w > frame.PlotRight()) x = frame.PlotLeft(), ++row;
    at.emplace_back(x, row);
    x += w;
  }
  return at;
}

}  // namespace

std::string Coord(double v) { return FormatFixed(v, 1); }

SeriesStyle DefaultStyle(size_t i) {
  SeriesStyle style;
  style.shape = kShapes[i % kShapes.size()];
  style.colour = kColours[i % kColours.size()];
  style.dash = kDashes[i % kDashes.size()];
  return style;
}

int LegendRows(const std::vector<LegendItem>& items, const ChartFrame& frame) {
  const auto at = LegendLayout(items, frame);
  return at.empty() ? 0 : at.back().second + 1;
}

void AppendChartOpen(std::string& out, std::string_view kind, std::string_view title, const ChartFrame& frame) {
  const std::string w = std::to_string(frame.width);
  const std::string h = std::to_string(frame.Height());
  out += "<svg class=\"ix-chart\" data-chart=\"" + EscapeXml(kind) +
         "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + w + " " + h + "\" width=\"" + w +
         "\" height=\"" + h + "\" role=\"img\" aria-label=\"" + EscapeXml(title) +
         "\" font-family=\"system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif\" font-size=\"12\">";
  out += "<rect width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>";
  out += "<text class=\"ix-title\" x=\"" + Coord(frame.width / 2.0) +
         "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\">" + EscapeXml(title) + "</text>";
}

void AppendYAxis(std::string& out, const ChartFrame& frame, const Axis& axis, std::string_view label) {
  out += "<g class=\"ix-axis-y\">";
  for (const double t : axis.ticks) {
    const std::string y = Coord(frame.Y(axis.Fraction(t)));
    out += "<line x1=\"" + Coord(frame.PlotLeft()) + "\" x2=\"" + Coord(frame.PlotRight()) + "\" y1=\"" + y +
           "\" y2=\"" + y + "\" stroke=\"#e4e4e4\"/>";
    out += "<text x=\"" + Coord(frame.PlotLeft() - 8) + "\" y=\"" + Coord(frame.Y(axis.Fraction(t)) + 4) +
           "\" text-anchor=\"end\" fill=\"#333333\">" + EscapeXml(axis.Label(t)) + "</text>";
  }
  const double mid = frame.PlotTop() + frame.plot_height / 2;
  out += "<text class=\"ix-axis-label\" transform=\"rotate(-90)\" x=\"" + Coord(-mid) +
         "\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">" + EscapeXml(label) + "</text></g>";
}

void AppendXAxis(std::string& out, const ChartFrame& frame, const Axis& axis, std::string_view label) {
  out += "<g class=\"ix-axis-x\">";
  for (const double t : axis.ticks) {
    const std::string x = Coord(frame.X(axis.Fraction(t)));
    out += "<line x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + Coord(frame.PlotTop()) + "\" y2=\"" +
           Coord(frame.PlotBottom()) + "\" stroke=\"#e4e4e4\"/>";
    out += "<text x=\"" + x + "\" y=\"" + Coord(frame.PlotBottom() + 18) + "\" text-anchor=\"middle\" fill=\"#333333\">" +
           EscapeXml(axis.Label(t)) + "</text>";
  }
  AppendXLabel(out, frame, label);
  out += "</g>";
}

void AppendXLabel(std::string& out, const ChartFrame& frame, std::string_view label) {
  out += "<text class=\"ix-axis-label\" x=\"" + Coord((frame.PlotLeft() + frame.PlotRight()) / 2) + "\" y=\"" +
         Coord(frame.PlotBottom() + frame.axis_gap) + "\" text-anchor=\"middle\" font-size=\"13\">" + EscapeXml(label) +
         "</text>";
}

void AppendPlotBorder(std::string& out, const ChartFrame& frame) {
  out += "<rect x=\"" + Coord(frame.PlotLeft()) + "\" y=\"" + Coord(frame.PlotTop()) + "\" width=\"" +
         Coord(frame.PlotRight() - frame.PlotLeft()) + "\" height=\"" + Coord(frame.plot_height) +
         "\" fill=\"none\" stroke=\"#888888\"/>";
}

void AppendMarker(std::string& out, const SeriesStyle& style, double cx, double cy, std::string_view tooltip) {
  AppendMarkerElement(out, style, cx, cy, "ix-point", tooltip);
}

void AppendLegend(std::string& out, const ChartFrame& frame, const std::vector<LegendItem>& items) {
  if (items.empty()) return;
  const auto at = LegendLayout(items, frame);
  out += "<g class=\"ix-legend\">";
  for (size_t i = 0; i < items.size(); ++i) {
    const LegendItem& item = items[i];
    const double x = at[i].first;
    const double y = frame.LegendTop() + at[i].second * kLegendRowHeight;
    out += "<line x1=\"" + Coord(x) + "\" x2=\"" + Coord(x + kSwatchWidth) + "\" y1=\"" + Coord(y) + "\" y2=\"" +
           Coord(y) + "\" stroke=\"" + item.style.colour + "\"";
    if (item.band) {
      out += " stroke-width=\"8\" stroke-opacity=\"0.3\" stroke-linecap=\"round\"";
    } else {
      out += " stroke-width=\"2\"";
    }
    if (!item.style.dash.empty()) out += " stroke-dasharray=\"" + item.style.dash + "\"";
    out += "/>";
    if (item.marker) AppendMarkerElement(out, item.style, x + kSwatchWidth / 2, y, "", "");
    out += "<text x=\"" + Coord(x + kSwatchWidth + 6) + "\" y=\"" + Coord(y + 4) + "\">" + EscapeXml(item.name) +
           "</text>";
  }
  out += "</g>";
}

std::string RenderEmptyChart(std::string_view kind, std::string_view title, ChartFrame frame) {
  std::string out;
  frame.legend_rows = 0;
  frame.plot_height = std::min(frame.plot_height, 120.0);
  AppendChartOpen(out, kind, title, frame);
  AppendPlotBorder(out, frame);
  AppendNoData(out, frame);
  return out + "</svg>";
}

void AppendNoData(std::string& out, const ChartFrame& frame) {
  out += "<text class=\"ix-no-data\" x=\"" + Coord((frame.PlotLeft() + frame.PlotRight()) / 2) + "\" y=\"" +
         Coord(frame.PlotTop() + frame.plot_height / 2) +
         "\" text-anchor=\"middle\" font-size=\"16\" fill=\"#666666\">no data</text>";
}

}  // namespace ix
