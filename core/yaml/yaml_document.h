// MatrixYaml: a parsed YAML document typed the way PyYAML's safe_load types
// it, for the InferenceX master-config reader. The reference generator reads
// its configs with PyYAML (YAML 1.1), so plain scalars resolve by YAML 1.1
// rules: `2_063_837` and `0x1F` are integers, `yes`/`off` are booleans,
// `~` is null, `2024-01-01` is a timestamp; quoted scalars are strings.
// Anchors, aliases and `<<` merge keys work as in PyYAML.
//
// Parsing uses libyaml (the C parser behind PyYAML), which is about ten times
// faster than yaml-cpp on the 320 KB master config. Every node keeps its
// 1-based line and column for located errors.
//
// Invariants: node ids index nodes(); a map's items() alternate key, value;
// after parsing, map keys are scalars, unique, in PyYAML's insertion order,
// and merge keys are already flattened. Aliased nodes are shared (the
// document is a DAG, never a cycle), and its fully expanded size is bounded
// (kMaxExpandedNodes), so walking it cannot explode.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

// The type a node has after YAML 1.1 resolution (PyYAML's view).
enum class YType : uint8_t { kNull, kBool, kInt, kFloat, kString, kTimestamp, kMap, kSeq };

// One node. Scalars keep their text as written (after YAML escapes); the
// typed value is in b, i (kInt; `overflow` when it does not fit int64) or f.
struct YNode {
  YType type = YType::kNull;
  bool b = false;
  bool overflow = false;
  uint32_t line = 0;
  uint32_t column = 0;
  int64_t i = 0;
  double f = 0;
  std::string text;
  std::vector<uint32_t> items;
};

// The document: nodes in an arena, the root, the name used in messages.
class YamlDoc {
 public:
  static constexpr uint64_t kMaxExpandedNodes = 4'000'000;
  static constexpr uint32_t kNoNode = UINT32_MAX;

  // Parses one document; `name` is used in messages. An empty document (or
  // one that is only comments) parses to a null root. Syntax errors, more
  // than one document, unsupported tags and undefined aliases are errors
  // "name:line:col: not valid YAML: ...".
  static Result<YamlDoc> Parse(std::string_view text, const std::string& name);
  // Reads and parses a file; an unreadable file is "path: cannot open: why".
  static Result<YamlDoc> ParseFile(const std::string& path);

  const std::string& name() const { return name_; }
  uint32_t root() const { return root_; }
  const YNode& node(uint32_t id) const { return nodes_[id]; }
  // "name:line:col" of a node.
  std::string Where(uint32_t id) const;
  // The value of `key` in map `map`, or kNoNode.
  uint32_t Find(uint32_t map, std::string_view key) const;

 private:
  friend class YamlBuilder;
  std::string name_;
  std::vector<YNode> nodes_;
  uint32_t root_ = kNoNode;
};

// "a mapping", "a list", "a string 'x'", "an integer (3)", ... for messages.
std::string DescribeYaml(const YNode& n);

// YamlCheck: typed, located access to a YamlDoc for the matrix loaders,
// with messages in the reference's words: "file:line:col: KEY: field
// 'PATH': problem" (KEY is the config key being read, when there is one).
// Failures throw YamlCheckError; loaders catch it at their public boundary,
// so no exception leaves ixcore.
struct YamlCheckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class YamlCheck {
 public:
  explicit YamlCheck(const YamlDoc& doc) : doc_(doc) {}

  const YamlDoc& doc() const { return doc_; }
  const YNode& node(uint32_t id) const { return doc_.node(id); }
  // The config key named in messages ("" for none).
  void set_key(std::string key) { key_ = std::move(key); }

  [[noreturn]] void Fail(uint32_t at, const std::string& path, const std::string& problem) const;
  void RequireMap(uint32_t id, const std::string& path) const;
  void RequireSeq(uint32_t id, const std::string& path) const;
  // Map with only `allowed` keys (all strings); lists the allowed ones.
  void CheckKeys(uint32_t map, const std::string& path, std::initializer_list<const char*> allowed) const;
  uint32_t Optional(uint32_t map, const char* key) const { return doc_.Find(map, key); }
  uint32_t Required(uint32_t map, const std::string& path, const char* key) const;

  std::string Str(uint32_t id, const std::string& path) const;
  int64_t Int(uint32_t id, const std::string& path) const;
  int64_t Positive(uint32_t id, const std::string& path) const;
  int64_t NonNegative(uint32_t id, const std::string& path) const;
  bool Bool(uint32_t id, const std::string& path) const;
  double Number(uint32_t id, const std::string& path) const;
  std::string Choice(uint32_t id, const std::string& path, std::initializer_list<const char*> allowed) const;

 private:
  const YamlDoc& doc_;
  std::string key_;
};

// "a.b" and "a[3]" for field paths.
std::string FieldPath(const std::string& parent, const std::string& key);
std::string FieldIndex(const std::string& parent, size_t i);

// YAML 1.1 resolution of one plain scalar, as PyYAML's Resolver and
// SafeConstructor do it; exposed for tests. Sets type and value fields.
void ResolvePlainScalar(YNode& n);

}  // namespace ix
