#include "core/base/text.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

using V = std::vector<std::string_view>;

TEST(Text, TrimRemovesTheGivenCharactersAtBothEnds) {
  EXPECT_EQ(Trim("  a b\r\n"), "a b");
  EXPECT_EQ(Trim(" \t\n"), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("\tv \n", " \t"), "v \n");
}

TEST(Text, PrintableEscapesControlBytes) {
  EXPECT_EQ(Printable("a\tb\n\x7f"), "a\\x09b\\x0a\\x7f");
  EXPECT_EQ(Printable("h\xc3\xa9"), "h\xc3\xa9");  // UTF-8 kept
  EXPECT_EQ(Printable("h\xc3\xa9", true), "h\\xc3\\xa9");
}

TEST(Text, SplitKeepsEmptyFields) {
  EXPECT_EQ(Split("a,,b", ','), (V{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (V{""}));
  EXPECT_EQ(Split("a,", ','), (V{"a", ""}));
}

TEST(Text, LinesDropTheLineEnds) {
  EXPECT_EQ(Lines("a\nb\n"), (V{"a", "b"}));
  EXPECT_EQ(Lines("a\n\nb"), (V{"a", "", "b"}));
  EXPECT_TRUE(Lines("").empty());
}

TEST(Text, NumbersAreDigitsOnlyAndFit) {
  uint64_t u = 7;
  EXPECT_TRUE(ParseUnsigned("18446744073709551615", u));
  EXPECT_EQ(u, UINT64_MAX);
  u = 7;
  EXPECT_FALSE(ParseUnsigned("18446744073709551616", u));
  EXPECT_FALSE(ParseUnsigned("", u));
  EXPECT_FALSE(ParseUnsigned("+1", u));
  EXPECT_FALSE(ParseUnsigned("1 ", u));
  EXPECT_EQ(u, 7u);
  int64_t s = 0;
  EXPECT_TRUE(ParseSigned("-9223372036854775808", s));
  EXPECT_EQ(s, INT64_MIN);
  EXPECT_FALSE(ParseSigned("9223372036854775808", s));
  EXPECT_FALSE(ParseSigned("-", s));
}

}  // namespace
}  // namespace ix
