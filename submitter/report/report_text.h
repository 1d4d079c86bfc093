// Text for the report's HTML and SVG: escaping of user text (config keys,
// arm names, failure reasons, hrefs) and numbers in one fixed, locale-free
// format, so the same ReportData always gives the same bytes.
#pragma once

#include <string>
#include <string_view>

namespace ix {

// What a number with no value shows: an em dash.
inline constexpr std::string_view kNoValue = "\xe2\x80\x94";

// `s` safe inside HTML/SVG text and double- or single-quoted attributes:
// & < > " ' as entities; bytes below 0x20 other than tab and newline
// (invalid in XML) as U+FFFD, so a key cannot break the markup.
std::string EscapeXml(std::string_view s);

// `v` with exactly `decimals` digits after the point ("812.3"), never in
// exponent form and without a "-" on a value that rounds to zero;
// kNoValue when `v` is NaN or infinite.
std::string FormatFixed(double v, int decimals);

// `v` rounded to `significant` digits, but never with digits removed before
// the point (0.4123 -> "0.412", 12.345 -> "12.3", 1234.6 -> "1235");
// kNoValue when `v` is NaN or infinite.
std::string FormatSignificant(double v, int significant = 3);

// Shorthands for the units the report uses everywhere, so every tok/s has
// one decimal and every second three significant digits.
inline std::string FormatTokS(double v) { return FormatFixed(v, 1); }
inline std::string FormatSeconds(double v) { return FormatSignificant(v, 3); }

}  // namespace ix
