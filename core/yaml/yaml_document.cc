// YamlDoc's lookups, its messages' words for a node, and reading a file;
// parsing itself is yaml_builder.cc.
#include "core/yaml/yaml_document.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace ix {

std::string DescribeYaml(const YNode& n) {
  switch (n.type) {
    case YType::kNull: return "nothing (null)";
    case YType::kBool: return std::string("a boolean (") + (n.b ? "true" : "false") + ")";
    case YType::kInt: return "an integer (" + n.text + ")";
    case YType::kFloat: return "a number (" + n.text + ")";
    case YType::kString: return "a string '" + n.text + "'";
    case YType::kTimestamp: return "a timestamp (" + n.text + ")";
    case YType::kMap: return "a mapping";
    case YType::kSeq: return "a list";
  }
  return "a value";
}

std::string YamlDoc::Where(uint32_t id) const {
  if (id >= nodes_.size()) return name_;
  const YNode& n = nodes_[id];
  return name_ + ":" + std::to_string(n.line) + ":" + std::to_string(n.column);
}

uint32_t YamlDoc::Find(uint32_t map, std::string_view key) const {
  const YNode& m = nodes_[map];
  if (m.type != YType::kMap) return kNoNode;
  for (size_t k = 0; k + 1 < m.items.size(); k += 2) {
    const YNode& kn = nodes_[m.items[k]];
    if (kn.type == YType::kString && kn.text == key) return m.items[k + 1];
  }
  return kNoNode;
}

Result<YamlDoc> YamlDoc::ParseFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Error{path + ": cannot read: is a directory"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open: " + std::strerror(errno)};
  std::string text;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) {
    return Error{path + ": cannot read: not a regular file"};
  }
  text.resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  if (!in.read(text.data(), size)) return Error{path + ": cannot read: " + std::strerror(errno)};
  return Parse(text, path);
}

}  // namespace ix
