// YamlDoc: a parsed YAML document typed the way PyYAML's safe_load types it:
// the project's one YAML reader, under the InferenceX master config and
// runner files (core/matrix, through YamlCheck) and the recipes
// (core/recipe, through YamlReader). The reference generator reads its
// configs with PyYAML (YAML 1.1), so plain scalars resolve by YAML 1.1 rules
// (yaml_scalar.h): `2_063_837` and `0x1F` are integers, `yes`/`off` are
// booleans, `~` is null, `2024-01-01` is a timestamp; quoted scalars are
// strings. Anchors, aliases and `<<` merge keys work as in PyYAML.
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

}  // namespace ix
