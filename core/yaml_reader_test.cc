#include "core/yaml_reader.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

std::string FailureOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const YamlError& e) {
    return e.what();
  }
  return "";
}

TEST(YamlReader, LocatesErrorsWithOneBasedLineAndColumn) {
  YAML::Node root = YAML::Load("a: 1\nb:\n  c: x\n");
  YamlReader r("f.yaml");
  const std::string msg = FailureOf([&] { r.PositiveInt(root["b"]["c"], "b.c"); });
  EXPECT_EQ(msg, "f.yaml:3:6: field 'b.c': expected a positive integer, got 'x'");
}

TEST(YamlReader, UnknownAndDuplicateKeys) {
  YamlReader r("f.yaml");
  EXPECT_NE(FailureOf([&] { r.CheckKeys(YAML::Load("a: 1\nz: 2"), "top", {"a", "b"}); })
                .find("field 'top.z': unknown field; allowed: a, b"),
            std::string::npos);
  EXPECT_NE(FailureOf([&] { r.CheckKeys(YAML::Load("a: 1\na: 2"), "", {"a"}); }).find("given twice"),
            std::string::npos);
}

TEST(YamlReader, MissingFieldNamesIt) {
  YamlReader r("f.yaml");
  YAML::Node m = YAML::Load("x: 1");
  EXPECT_NE(FailureOf([&] { r.Required(m, "arms.tp4", "gpus"); })
                .find("field 'arms.tp4.gpus': missing (required)"),
            std::string::npos);
}

TEST(YamlReader, Bytes) {
  YamlReader r("f.yaml");
  EXPECT_EQ(r.Bytes(YAML::Load("189GiB"), "b"), 189ull << 30);
  EXPECT_EQ(r.Bytes(YAML::Load("1.5TiB"), "b"), 3ull << 39);
  EXPECT_EQ(r.Bytes(YAML::Load("2GB"), "b"), 2000000000ull);
  EXPECT_EQ(r.Bytes(YAML::Load("4096"), "b"), 4096ull);
  EXPECT_NE(FailureOf([&] { r.Bytes(YAML::Load("lots"), "b"); }).find("units:"), std::string::npos);
  EXPECT_NE(FailureOf([&] { r.Bytes(YAML::Load("-1GiB"), "b"); }).find("positive size"),
            std::string::npos);
}

TEST(YamlReader, ChoiceListsAllowedValues) {
  YamlReader r("f.yaml");
  EXPECT_NE(FailureOf([&] { r.Choice(YAML::Load("node"), "per", {"dp_rank", "gpu", "step"}); })
                .find("'node' is not allowed; allowed: dp_rank, gpu, step"),
            std::string::npos);
}

TEST(YamlReader, ParseErrorsNameTheFile) {
  auto empty = ParseYamlString("", "e.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "e.yaml: file is empty, expected a YAML mapping");
  auto bad = ParseYamlString("a: [1, 2\n", "b.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("b.yaml:", 0), 0u);
  EXPECT_NE(bad.error().message.find("not valid YAML"), std::string::npos);
  auto missing = ParseYamlFile("/nonexistent/x.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/x.yaml: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace ix
