#include "submitter/report/report_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ix {
namespace {

TEST(ReportText, EscapeXmlEscapesMarkupAndQuotes) {
  EXPECT_EQ(EscapeXml("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
  EXPECT_EQ(EscapeXml("h\xc3\xa9 \xc2\xb7 x"), "h\xc3\xa9 \xc2\xb7 x");  // UTF-8 kept
  EXPECT_EQ(EscapeXml(std::string("a\x01" "b\tc\n", 6)), "a\xef\xbf\xbd" "b\tc\n");
  EXPECT_EQ(EscapeXml(""), "");
}

TEST(ReportText, FormatFixedHasExactlyTheDecimals) {
  EXPECT_EQ(FormatFixed(812.345, 1), "812.3");
  EXPECT_EQ(FormatFixed(812.36, 1), "812.4");
  EXPECT_EQ(FormatFixed(3, 1), "3.0");
  EXPECT_EQ(FormatFixed(1e9, 0), "1000000000");  // never exponent form
  EXPECT_EQ(FormatFixed(-0.04, 1), "0.0");        // no "-0.0"
  EXPECT_EQ(FormatFixed(-1.25, 1), "-1.2");
}

TEST(ReportText, NonFiniteNumbersShowNoValue) {
  EXPECT_EQ(FormatFixed(std::nan(""), 1), kNoValue);
  EXPECT_EQ(FormatFixed(std::numeric_limits<double>::infinity(), 1), kNoValue);
  EXPECT_EQ(FormatSignificant(-std::numeric_limits<double>::infinity()), kNoValue);
}

TEST(ReportText, FormatSignificantKeepsThreeDigitsButNoWholeDigitsLost) {
  EXPECT_EQ(FormatSignificant(0.41234), "0.412");
  EXPECT_EQ(FormatSignificant(12.345), "12.3");
  EXPECT_EQ(FormatSignificant(1.0), "1.00");
  EXPECT_EQ(FormatSignificant(0.000123456), "0.000123");
  EXPECT_EQ(FormatSignificant(9.996), "10.0");  // rounds up to the next digit
  EXPECT_EQ(FormatSignificant(99.96), "100");
  EXPECT_EQ(FormatSignificant(1234.6), "1235");
  EXPECT_EQ(FormatSignificant(0), "0");
  EXPECT_EQ(FormatSignificant(-0.5), "-0.500");
  EXPECT_EQ(FormatSeconds(0.0523), "0.0523");
  EXPECT_EQ(FormatTokS(41.25), "41.2");
}

}  // namespace
}  // namespace ix
