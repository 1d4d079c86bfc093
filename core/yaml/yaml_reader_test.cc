#include "core/yaml/yaml_reader.h"

#include <gtest/gtest.h>

#include <functional>

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

YamlDoc Parse(const std::string& text) {
  Result<YamlDoc> doc = ParseYamlString(text, "f.yaml");
  EXPECT_TRUE(doc.ok()) << doc.error().message;
  return std::move(doc).value();
}

TEST(YamlReader, LocatesErrorsWithOneBasedLineAndColumn) {
  const YamlDoc doc = Parse("a: 1\nb:\n  c: x\n");
  YamlReader r(doc);
  const uint32_t c = r.Find(r.Find(doc.root(), "b"), "c");
  const std::string msg = FailureOf([&] { r.PositiveInt(c, "b.c"); });
  EXPECT_EQ(msg, "f.yaml:3:6: field 'b.c': expected a positive integer, got 'x'");
}

TEST(YamlReader, UnknownAndDuplicateKeys) {
  const YamlDoc unknown = Parse("a: 1\nz: 2");
  YamlReader r(unknown);
  EXPECT_NE(FailureOf([&] { r.CheckKeys(unknown.root(), "top", {"a", "b"}); })
                .find("field 'top.z': unknown field; allowed: a, b"),
            std::string::npos);
  // A key written twice is rejected by the parser, with its location.
  auto twice = ParseYamlString("a: 1\na: 2", "f.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message, "f.yaml:2:1: not valid YAML: mapping key 'a' is given twice");
  // Keys of different YAML types with the same text are caught by CheckKeys.
  const YamlDoc same_text = Parse("on: 1\n\"on\": 2");
  YamlReader rs(same_text);
  EXPECT_EQ(FailureOf([&] { rs.CheckKeys(same_text.root(), "", {"on"}); }),
            "f.yaml:2:1: field 'on': given twice");
}

TEST(YamlReader, MissingFieldNamesIt) {
  const YamlDoc doc = Parse("x: 1");
  YamlReader r(doc);
  EXPECT_NE(FailureOf([&] { r.Required(doc.root(), "arms.tp4", "gpus"); })
                .find("field 'arms.tp4.gpus': missing (required)"),
            std::string::npos);
}

// Scalars read as the text written, whatever type YAML 1.1 would give them;
// null is not a string.
TEST(YamlReader, ScalarsAreTheirText) {
  const YamlDoc doc = Parse(
      "- 8000\n- yes\n- 1.50\n- 0x1F\n- 2024-01-01\n- \"\"\n- ~\n- null\n-\n- [a]\n- {a: b}\n"
      "- \"~\"\n- true\n");
  YamlReader r(doc);
  auto item = [&](size_t i) { return r.Item(doc.root(), i); };
  EXPECT_EQ(r.String(item(0), "s"), "8000");
  EXPECT_EQ(r.String(item(1), "s"), "yes");
  EXPECT_EQ(r.String(item(2), "s"), "1.50");
  EXPECT_EQ(r.String(item(3), "s"), "0x1F");
  EXPECT_EQ(r.String(item(4), "s"), "2024-01-01");
  EXPECT_EQ(r.String(item(5), "s"), "");
  EXPECT_EQ(FailureOf([&] { r.String(item(6), "s"); }), "f.yaml:7:3: field 's': expected a string, got nothing (null)");
  EXPECT_NE(FailureOf([&] { r.String(item(7), "s"); }).find("got nothing (null)"), std::string::npos);
  EXPECT_NE(FailureOf([&] { r.String(item(8), "s"); }).find("got nothing (null)"), std::string::npos);
  EXPECT_NE(FailureOf([&] { r.String(item(9), "s"); }).find("expected a string, got a list"), std::string::npos);
  EXPECT_NE(FailureOf([&] { r.String(item(10), "s"); }).find("expected a string, got a mapping"), std::string::npos);
  EXPECT_EQ(r.String(item(11), "s"), "~");
  EXPECT_EQ(r.PositiveInt(item(0), "n"), 8000);
  EXPECT_NE(FailureOf([&] { r.PositiveInt(item(3), "n"); }).find("expected a positive integer, got '0x1F'"),
            std::string::npos);
  EXPECT_TRUE(r.Bool(item(12), "b"));
  EXPECT_NE(FailureOf([&] { r.Bool(item(1), "b"); }).find("expected true or false, got 'yes'"), std::string::npos);
  EXPECT_NE(FailureOf([&] { r.RequireMap(item(0), "m"); }).find("expected a mapping, got a scalar"),
            std::string::npos);
}

TEST(YamlReader, Bytes) {
  const YamlDoc doc = Parse("[189GiB, 1.5TiB, 2GB, 4096, lots, -1GiB]");
  YamlReader r(doc);
  auto item = [&](size_t i) { return r.Item(doc.root(), i); };
  EXPECT_EQ(r.Bytes(item(0), "b"), 189ull << 30);
  EXPECT_EQ(r.Bytes(item(1), "b"), 3ull << 39);
  EXPECT_EQ(r.Bytes(item(2), "b"), 2000000000ull);
  EXPECT_EQ(r.Bytes(item(3), "b"), 4096ull);
  EXPECT_NE(FailureOf([&] { r.Bytes(item(4), "b"); }).find("units:"), std::string::npos);
  EXPECT_NE(FailureOf([&] { r.Bytes(item(5), "b"); }).find("positive size"), std::string::npos);
}

TEST(YamlReader, ChoiceListsAllowedValues) {
  const YamlDoc doc = Parse("node");
  YamlReader r(doc);
  EXPECT_NE(FailureOf([&] { r.Choice(doc.root(), "per", {"dp_rank", "gpu", "step"}); })
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
