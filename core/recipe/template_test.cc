#include "core/recipe/template.h"

#include <gtest/gtest.h>

#include <map>

namespace ix {
namespace {

std::optional<std::string> Lookup(const std::string& name) {
  static const std::map<std::string, std::string> kVars = {{"PORT", "20000"}, {"A_1", "x"}};
  auto it = kVars.find(name);
  if (it == kVars.end()) return std::nullopt;
  return it->second;
}

TEST(Template, RendersVariablesAndLiterals) {
  auto t = Template::Parse("http://localhost:${PORT}/metrics");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t.value().Render(Lookup).value(), "http://localhost:20000/metrics");
  EXPECT_EQ(t.value().Variables(), std::vector<std::string>{"PORT"});
}

TEST(Template, JsonBracesAreLiteral) {
  auto t = Template::Parse(R"({"cpu_offload":true,"p":${PORT}})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value().Render(Lookup).value(), R"({"cpu_offload":true,"p":20000})");
}

TEST(Template, DollarDollarIsALiteralDollar) {
  auto t = Template::Parse("$$HOME and $${PORT}");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t.value().Variables().empty());
  EXPECT_EQ(t.value().Render(Lookup).value(), "$HOME and ${PORT}");
}

TEST(Template, NoShellSemantics) {
  auto t = Template::Parse("a b;$${A_1} `x` $$(y)");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value().Render(Lookup).value(), "a b;${A_1} `x` $(y)");
}

TEST(Template, RejectsLoneDollarUnclosedAndBadNames) {
  EXPECT_NE(Template::Parse("$PORT").error().message.find("lone '$'"), std::string::npos);
  EXPECT_NE(Template::Parse("x$").error().message.find("lone '$'"), std::string::npos);
  EXPECT_NE(Template::Parse("${PORT").error().message.find("no closing"), std::string::npos);
  EXPECT_NE(Template::Parse("${1X}").error().message.find("not a variable name"), std::string::npos);
  EXPECT_NE(Template::Parse("${}").error().message.find("not a variable name"), std::string::npos);
  EXPECT_NE(Template::Parse("${A-B}").error().message.find("not a variable name"), std::string::npos);
}

TEST(Template, UnknownVariableAtRenderIsAnError) {
  auto t = Template::Parse("${NOPE}");
  ASSERT_TRUE(t.ok());
  auto r = t.value().Render(Lookup);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("${NOPE}"), std::string::npos);
}

}  // namespace
}  // namespace ix
