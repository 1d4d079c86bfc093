#include "core/yaml/yaml_document.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(YamlDoc, QuotedScalarsAreStrings) {
  Result<YamlDoc> d = YamlDoc::Parse("a: '12'\nb: \"yes\"\nc: !!str 3\nd: !!int '0x10'\n", "t.yaml");
  ASSERT_TRUE(d.ok()) << d.error().message;
  const YamlDoc& doc = d.value();
  EXPECT_EQ(doc.node(doc.Find(doc.root(), "a")).type, YType::kString);
  EXPECT_EQ(doc.node(doc.Find(doc.root(), "b")).type, YType::kString);
  EXPECT_EQ(doc.node(doc.Find(doc.root(), "c")).type, YType::kString);
  EXPECT_EQ(doc.node(doc.Find(doc.root(), "d")).i, 16);
}

TEST(YamlDoc, MarksAreOneBased) {
  Result<YamlDoc> d = YamlDoc::Parse("top:\n  key: value\n", "t.yaml");
  ASSERT_TRUE(d.ok());
  const YamlDoc& doc = d.value();
  const uint32_t v = doc.Find(doc.Find(doc.root(), "top"), "key");
  EXPECT_EQ(doc.Where(v), "t.yaml:2:8");
}

TEST(YamlDoc, AnchorsAliasesAndMergeKeysAsPyYaml) {
  Result<YamlDoc> d = YamlDoc::Parse(
      "base: &b {tp: 4, ep: 1, dp-attn: false}\n"
      "x:\n  <<: *b\n  ep: 4\n  conc: 8\n"
      "y: *b\n",
      "t.yaml");
  ASSERT_TRUE(d.ok()) << d.error().message;
  const YamlDoc& doc = d.value();
  const YNode& x = doc.node(doc.Find(doc.root(), "x"));
  ASSERT_EQ(x.items.size(), 8u);
  // Merged keys first, in their order; the explicit ep overrides in place.
  EXPECT_EQ(doc.node(x.items[0]).text, "tp");
  EXPECT_EQ(doc.node(x.items[2]).text, "ep");
  EXPECT_EQ(doc.node(x.items[3]).i, 4);
  EXPECT_EQ(doc.node(x.items[6]).text, "conc");
  EXPECT_EQ(doc.node(doc.Find(doc.root(), "y")).type, YType::kMap);
}

std::string ParseError(const std::string& text) {
  Result<YamlDoc> d = YamlDoc::Parse(text, "t.yaml");
  EXPECT_FALSE(d.ok()) << text;
  return d.ok() ? "" : d.error().message;
}

TEST(YamlDoc, ErrorsAreLocated) {
  EXPECT_NE(ParseError("a: [1, 2\nb: 3\n").find("t.yaml:"), std::string::npos);
  EXPECT_NE(ParseError("a: [1, 2\nb: 3\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(ParseError("a: 1\na: 2\n").find("t.yaml:2:1: not valid YAML: mapping key 'a' is given twice"),
            std::string::npos);
  EXPECT_NE(ParseError("a: *nope\n").find("found undefined alias 'nope'"), std::string::npos);
  EXPECT_NE(ParseError("a: 1\n---\nb: 2\n").find("expected a single document"), std::string::npos);
  EXPECT_NE(ParseError("a: !!binary aGk=\n").find("unsupported tag"), std::string::npos);
  EXPECT_NE(ParseError("a: !!int nope\n").find("invalid literal for an integer"), std::string::npos);
  EXPECT_NE(ParseError("a: \"\\xff\xff\"\n").find("t.yaml:1:"), std::string::npos);
  EXPECT_NE(ParseError("? [1]\n: x\n").find("mapping keys must be scalars"), std::string::npos);
}

TEST(YamlDoc, AliasBombIsRefused) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'k'; ++c) {
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) text += std::string(i ? ", *" : "*") + prev;
    text += "]\n";
    prev = c;
  }
  EXPECT_NE(ParseError(text).find("aliases expand the document beyond"), std::string::npos);
}

TEST(YamlDoc, EmptyDocumentIsNull) {
  Result<YamlDoc> d = YamlDoc::Parse("# only a comment\n", "t.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.value().node(d.value().root()).type, YType::kNull);
}

TEST(YamlDoc, MissingFile) {
  Result<YamlDoc> d = YamlDoc::ParseFile("/nonexistent/x.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().message, "/nonexistent/x.yaml: cannot open: No such file or directory");
}

}  // namespace
}  // namespace ix
