#include "core/yaml_reader.h"

#include "core/file_text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace ix {

std::string JoinNames(const std::vector<std::string>& names, const char* sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += sep;
    out += names[i];
  }
  return out;
}

Result<YAML::Node> ParseYamlString(const std::string& text, const std::string& name) {
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsDefined() || root.IsNull()) {
      return Error{name + ": file is empty, expected a YAML mapping"};
    }
    return root;
  } catch (const YAML::Exception& e) {
    return Error{name + ":" + std::to_string(e.mark.line + 1) + ":" +
                 std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg};
  }
}

Result<YAML::Node> ParseYamlFile(const std::string& path) {
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err != 0) return Error{path + ": cannot open: " + std::strerror(err)};
  if (text.find('\0') != std::string::npos) {
    return Error{path + ": not valid YAML: file contains NUL bytes (a binary file?)"};
  }
  return ParseYamlString(text, path);
}

std::string YamlReader::Where(const YAML::Node& node) const {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return file_;
  return file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

void YamlReader::Fail(const YAML::Node& at, const std::string& field,
                      const std::string& problem) const {
  throw YamlError(Where(at) + ": " + (field.empty() ? "" : "field '" + field + "': ") + problem);
}

namespace {
const char* KindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "nothing (null)";
    default: return "an undefined value";
  }
}
}  // namespace

void YamlReader::RequireMap(const YAML::Node& node, const std::string& field) const {
  if (!node.IsMap()) Fail(node, field, std::string("expected a mapping, got ") + KindName(node));
}

void YamlReader::RequireSequence(const YAML::Node& node, const std::string& field) const {
  if (!node.IsSequence()) Fail(node, field, std::string("expected a list, got ") + KindName(node));
}

void YamlReader::CheckKeys(const YAML::Node& map, const std::string& field,
                           const std::vector<std::string>& allowed) const {
  RequireMap(map, field);
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) Fail(kv.first, field, "keys must be plain strings");
    const std::string key = kv.first.Scalar();
    const std::string path = field.empty() ? key : field + "." + key;
    if (!seen.insert(key).second) Fail(kv.first, path, "given twice");
    bool known = false;
    for (const auto& a : allowed) known = known || a == key;
    if (!known) Fail(kv.first, path, "unknown field; allowed: " + JoinNames(allowed));
  }
}

YAML::Node YamlReader::Required(const YAML::Node& map, const std::string& field,
                                const std::string& key) const {
  YAML::Node v = map[key];
  const std::string path = field.empty() ? key : field + "." + key;
  if (!v.IsDefined()) Fail(map, path, "missing (required)");
  return v;
}

std::string YamlReader::String(const YAML::Node& node, const std::string& field) const {
  if (!node.IsScalar()) Fail(node, field, std::string("expected a string, got ") + KindName(node));
  return node.Scalar();
}

int64_t YamlReader::PositiveInt(const YAML::Node& node, const std::string& field) const {
  const std::string s = String(node, field);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v <= 0) {
    Fail(node, field, "expected a positive integer, got '" + s + "'");
  }
  return v;
}

bool YamlReader::Bool(const YAML::Node& node, const std::string& field) const {
  const std::string s = String(node, field);
  if (s == "true") return true;
  if (s == "false") return false;
  Fail(node, field, "expected true or false, got '" + s + "'");
}

uint64_t YamlReader::Bytes(const YAML::Node& node, const std::string& field) const {
  const std::string s = String(node, field);
  struct Unit {
    const char* suffix;
    double factor;
  };
  static const Unit kUnits[] = {{"TiB", 1099511627776.0}, {"GiB", 1073741824.0},
                                {"MiB", 1048576.0},       {"KiB", 1024.0},
                                {"TB", 1e12},             {"GB", 1e9},
                                {"MB", 1e6},              {"KB", 1e3},
                                {"B", 1.0}};
  double factor = 1.0;
  std::string number = s;
  for (const Unit& u : kUnits) {
    const std::string suf = u.suffix;
    if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
      factor = u.factor;
      number = s.substr(0, s.size() - suf.size());
      break;
    }
  }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || errno != 0 || !(v > 0) || !std::isfinite(v)) {
    Fail(node, field,
         "expected a positive size such as 189GiB (units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), "
         "got '" + s + "'");
  }
  return static_cast<uint64_t>(std::llround(v * factor));
}

std::string YamlReader::Choice(const YAML::Node& node, const std::string& field,
                               const std::vector<std::string>& allowed) const {
  const std::string s = String(node, field);
  for (const auto& a : allowed) {
    if (a == s) return s;
  }
  Fail(node, field, "'" + s + "' is not allowed; allowed: " + JoinNames(allowed));
}

}  // namespace ix
