#include "submitter/report/report_text.h"

#include <charconv>
#include <cmath>

namespace ix {

std::string EscapeXml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // XML 1.0 forbids these control characters even as references.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          out += "\xef\xbf\xbd";
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string FormatFixed(double v, int decimals) {
  if (!std::isfinite(v)) return std::string(kNoValue);
  if (decimals < 0) decimals = 0;
  if (decimals > 17) decimals = 17;
  // 309 digits before the point at most (DBL_MAX), 17 after, sign and point.
  char buf[340];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  if (ec != std::errc()) return std::string(kNoValue);
  std::string out(buf, end);
  // "-0.0": the sign of a value that rounds to zero says nothing.
  if (out.front() == '-' && out.find_first_not_of("-0.") == std::string::npos) out.erase(0, 1);
  return out;
}

std::string FormatSignificant(double v, int significant) {
  if (!std::isfinite(v)) return std::string(kNoValue);
  if (significant < 1) significant = 1;
  if (v == 0) return "0";
  // Whole digits are never rounded away (1234.6 is "1235", not "1230").
  if (std::fabs(v) >= std::pow(10.0, significant - 1)) return FormatFixed(v, 0);
  // Round first, then count the digits of the rounded value: 9.996 at three
  // digits is "10.0", not "10.00".
  const double scale = std::pow(10.0, std::floor(std::log10(std::fabs(v))) - (significant - 1));
  const double rounded = std::round(v / scale) * scale;
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(rounded))));
  const int decimals = significant - 1 - magnitude;
  return FormatFixed(rounded, decimals > 0 ? decimals : 0);
}

}  // namespace ix
