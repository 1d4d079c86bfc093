// YamlReader: typed, located access to one parsed YAML document, shared by
// the loaders of recipes, step options and sweep plans. Each accessor either
// returns the value or throws YamlError whose message names
// "file:line:col: field: problem, expected"; loaders catch it at their
// public boundary and return it as an ix::Error, so no exception leaves a
// loader. Lines and columns are 1-based.
//
// The document is a YamlDoc (core/yaml/yaml_document.h, libyaml); nodes are
// its ids. YamlDoc types plain scalars by YAML 1.1 rules (`yes` is a
// boolean, `8000` an integer), but this reader reads every scalar as the
// text it was written as, so `8000` is a fine string and `yes` is not
// `true`. Null (`~`, `null`, nothing) is not a scalar here: where a value is
// required it is an error. YamlDoc already rejects a mapping key written
// twice, with its location.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/yaml/yaml_document.h"
#include "core/base/result.h"

namespace ix {

// What every YamlReader accessor throws: the located message.
struct YamlError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses a whole file or string; syntax errors, unreadable and empty input
// are errors naming the file. The document's name() is `path` / `name`.
Result<YamlDoc> ParseYamlFile(const std::string& path);
Result<YamlDoc> ParseYamlString(const std::string& text, const std::string& name);

class YamlReader {
 public:
  static constexpr uint32_t kNone = YamlDoc::kNoNode;

  // Messages name `doc.name()`; the document must outlive the reader.
  explicit YamlReader(const YamlDoc& doc) : doc_(doc) {}

  const std::string& file() const { return doc_.name(); }
  const YamlDoc& doc() const { return doc_; }
  const YNode& node(uint32_t id) const { return doc_.node(id); }

  // Node kinds as the loaders see them: a scalar is anything but null, a
  // mapping or a list.
  bool IsMap(uint32_t id) const { return node(id).type == YType::kMap; }
  bool IsSequence(uint32_t id) const { return node(id).type == YType::kSeq; }
  bool IsNull(uint32_t id) const { return node(id).type == YType::kNull; }
  bool IsScalar(uint32_t id) const { return !IsMap(id) && !IsSequence(id) && !IsNull(id); }
  // Entries of a mapping (key, value pairs) or items of a list.
  size_t Size(uint32_t id) const {
    return IsMap(id) ? node(id).items.size() / 2 : node(id).items.size();
  }
  // The i-th item of a list.
  uint32_t Item(uint32_t list, size_t i) const { return node(list).items[i]; }
  // The value of scalar key `key` in mapping `map`, or kNone (also when
  // `map` is not a mapping).
  uint32_t Find(uint32_t map, std::string_view key) const;

  // "file:line:col" of a node (the file alone for kNone).
  std::string Where(uint32_t id) const;
  [[noreturn]] void Fail(uint32_t at, const std::string& field, const std::string& problem) const;

  void RequireMap(uint32_t id, const std::string& field) const;
  void RequireSequence(uint32_t id, const std::string& field) const;
  // Rejects keys not in `allowed` (listing them) and keys given twice.
  void CheckKeys(uint32_t map, const std::string& field,
                 const std::vector<std::string>& allowed) const;
  // The value of a key that must be present.
  uint32_t Required(uint32_t map, const std::string& field, const std::string& key) const;

  // The scalar's text as written.
  const std::string& String(uint32_t id, const std::string& field) const;
  int64_t PositiveInt(uint32_t id, const std::string& field) const;
  bool Bool(uint32_t id, const std::string& field) const;
  // "189GiB", "1.5TiB", "512MB", or a plain number of bytes.
  uint64_t Bytes(uint32_t id, const std::string& field) const;
  // A string choice; the error lists `allowed`.
  std::string Choice(uint32_t id, const std::string& field,
                     const std::vector<std::string>& allowed) const;

 private:
  const YamlDoc& doc_;
};

// "a, b, c" for messages.
std::string JoinNames(const std::vector<std::string>& names, const char* sep = ", ");

}  // namespace ix
