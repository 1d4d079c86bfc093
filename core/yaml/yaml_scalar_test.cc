#include "core/yaml/yaml_scalar.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

YNode Resolve(const std::string& text) {
  YNode n;
  n.text = text;
  ResolvePlainScalar(n);
  return n;
}

TEST(YamlScalar, Yaml11IntegersAsPyYamlReadsThem) {
  EXPECT_EQ(Resolve("2_063_837").type, YType::kInt);
  EXPECT_EQ(Resolve("2_063_837").i, 2063837);
  EXPECT_EQ(Resolve("0x1F").i, 31);
  EXPECT_EQ(Resolve("0b101").i, 5);
  EXPECT_EQ(Resolve("0777").i, 511);  // YAML 1.1 octal
  EXPECT_EQ(Resolve("1:30").i, 90);   // sexagesimal
  EXPECT_EQ(Resolve("-42").i, -42);
  EXPECT_EQ(Resolve("+7").i, 7);
  EXPECT_EQ(Resolve("0").i, 0);
  EXPECT_EQ(Resolve("-9223372036854775808").i, INT64_MIN);
  EXPECT_TRUE(Resolve("9223372036854775808").overflow);
  EXPECT_EQ(Resolve("08").type, YType::kString);  // not octal, not decimal
}

TEST(YamlScalar, Yaml11BoolsNullsFloatsTimestamps) {
  for (const char* t : {"yes", "Yes", "YES", "on", "true", "True"}) {
    EXPECT_EQ(Resolve(t).type, YType::kBool) << t;
    EXPECT_TRUE(Resolve(t).b) << t;
  }
  for (const char* f : {"no", "off", "OFF", "false", "FALSE"}) EXPECT_FALSE(Resolve(f).b) << f;
  EXPECT_EQ(Resolve("y").type, YType::kString);  // PyYAML: not a bool
  for (const char* n : {"", "~", "null", "Null", "NULL"}) EXPECT_EQ(Resolve(n).type, YType::kNull) << n;
  EXPECT_EQ(Resolve("0.95").type, YType::kFloat);
  EXPECT_DOUBLE_EQ(Resolve("0.95").f, 0.95);
  EXPECT_DOUBLE_EQ(Resolve("1_0.5").f, 10.5);
  EXPECT_DOUBLE_EQ(Resolve("1.").f, 1.0);
  EXPECT_EQ(Resolve("1e3").type, YType::kString);  // PyYAML needs a dot
  EXPECT_EQ(Resolve("1.5e+3").type, YType::kFloat);
  EXPECT_EQ(Resolve(".inf").type, YType::kFloat);
  EXPECT_EQ(Resolve("2024-01-01").type, YType::kTimestamp);
  EXPECT_EQ(Resolve("0.8.1.post1").type, YType::kString);
  EXPECT_EQ(Resolve("cluster:b300-nv").type, YType::kString);
}

// Explicit tags construct their type or say why not.
TEST(YamlScalar, TaggedScalars) {
  auto tagged = [](const char* tag, const std::string& text, std::string* problem = nullptr) {
    YNode n;
    n.text = text;
    std::string why;
    const bool ok = ResolveTaggedScalar(tag, n, why);
    if (problem) *problem = why;
    return ok ? n : YNode{};
  };
  EXPECT_EQ(tagged("tag:yaml.org,2002:int", "0x10").i, 16);
  EXPECT_EQ(tagged("tag:yaml.org,2002:str", "3").type, YType::kString);
  EXPECT_EQ(tagged("!", "yes").type, YType::kString);
  EXPECT_TRUE(tagged("tag:yaml.org,2002:bool", "ON").b);
  EXPECT_DOUBLE_EQ(tagged("tag:yaml.org,2002:float", "1_5").f, 15.0);
  std::string why;
  tagged("tag:yaml.org,2002:int", "nope", &why);
  EXPECT_EQ(why, "invalid literal for an integer: 'nope'");
  tagged("tag:yaml.org,2002:binary", "aGk=", &why);
  EXPECT_EQ(why, "unsupported tag 'tag:yaml.org,2002:binary'");
}

}  // namespace
}  // namespace ix
