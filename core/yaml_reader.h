// YamlReader: typed, located access to one parsed YAML document, shared by
// every ixcore loader. Each accessor either returns the value or throws
// YamlError whose message names "file:line:col: field: problem, expected";
// loaders catch it at their public boundary and return it as an ix::Error,
// so no exception leaves ixcore. Lines and columns are 1-based.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/result.h"

namespace ix {

struct YamlError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses a whole file or string; syntax errors, unreadable and empty input
// are errors naming the file.
Result<YAML::Node> ParseYamlFile(const std::string& path);
Result<YAML::Node> ParseYamlString(const std::string& text, const std::string& name);

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  // "file:line:col" of a node (the file alone when the node has no mark).
  std::string Where(const YAML::Node& node) const;
  [[noreturn]] void Fail(const YAML::Node& at, const std::string& field,
                         const std::string& problem) const;

  void RequireMap(const YAML::Node& node, const std::string& field) const;
  void RequireSequence(const YAML::Node& node, const std::string& field) const;
  // Rejects keys not in `allowed` (listing them) and keys given twice.
  void CheckKeys(const YAML::Node& map, const std::string& field,
                 const std::vector<std::string>& allowed) const;
  // The value of a key that must be present.
  YAML::Node Required(const YAML::Node& map, const std::string& field,
                      const std::string& key) const;

  std::string String(const YAML::Node& node, const std::string& field) const;
  int64_t PositiveInt(const YAML::Node& node, const std::string& field) const;
  bool Bool(const YAML::Node& node, const std::string& field) const;
  // "189GiB", "1.5TiB", "512MB", or a plain number of bytes.
  uint64_t Bytes(const YAML::Node& node, const std::string& field) const;
  // A string choice; the error lists `allowed`.
  std::string Choice(const YAML::Node& node, const std::string& field,
                     const std::vector<std::string>& allowed) const;

 private:
  std::string file_;
};

// "a, b, c" for messages.
std::string JoinNames(const std::vector<std::string>& names, const char* sep = ", ");

}  // namespace ix
