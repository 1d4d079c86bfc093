// YamlCheck: typed, located access to a YamlDoc for the matrix loaders
// (master configs and runner files), with messages in the reference's
// (pydantic's) words: "file:line:col: KEY: field 'PATH': problem" (KEY is
// the config key being read, when there is one). Failures throw
// YamlCheckError; loaders catch it at their public boundary, so no
// exception leaves them. The recipes read with YamlReader (yaml_reader.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "core/yaml/yaml_document.h"

namespace ix {

// What every YamlCheck accessor throws: the located message.
struct YamlCheckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "a.b" and "a[3]" for field paths.
std::string FieldPath(const std::string& parent, const std::string& key);
std::string FieldIndex(const std::string& parent, size_t i);

// Invariant: the document outlives the check (it holds a reference).
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

  // Calls fn(key, path of the value, value) for each entry of mapping `map`
  // at `path`, in written order; every key must be a string.
  template <class Fn>
  void ForEachEntry(uint32_t map, const std::string& path, Fn&& fn) const {
    RequireMap(map, path);
    const YNode& m = node(map);
    for (size_t k = 0; k + 1 < m.items.size(); k += 2) {
      const std::string key = Str(m.items[k], path);
      fn(key, FieldPath(path, key), m.items[k + 1]);
    }
  }

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


}  // namespace ix
