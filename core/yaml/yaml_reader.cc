#include "core/yaml/yaml_reader.h"

#include "core/base/file_text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ix {

std::string JoinNames(const std::vector<std::string>& names, const char* sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += sep;
    out += names[i];
  }
  return out;
}

Result<YamlDoc> ParseYamlString(const std::string& text, const std::string& name) {
  Result<YamlDoc> doc = YamlDoc::Parse(text, name);
  if (!doc) return doc;
  if (doc.value().node(doc.value().root()).type == YType::kNull) {
    return Error{name + ": file is empty, expected a YAML mapping"};
  }
  return doc;
}

Result<YamlDoc> ParseYamlFile(const std::string& path) {
  int err = 0;
  const std::string text = ReadFileText(path, &err);
  if (err != 0) return Error{path + ": cannot open: " + std::strerror(err)};
  if (text.find('\0') != std::string::npos) {
    return Error{path + ": not valid YAML: file contains NUL bytes (a binary file?)"};
  }
  return ParseYamlString(text, path);
}

uint32_t YamlReader::Find(uint32_t map, std::string_view key) const {
  const YNode& m = node(map);
  if (m.type != YType::kMap) return kNone;
  for (size_t k = 0; k + 1 < m.items.size(); k += 2) {
    if (IsScalar(m.items[k]) && node(m.items[k]).text == key) return m.items[k + 1];
  }
  return kNone;
}

std::string YamlReader::Where(uint32_t id) const {
  if (id == kNone) return file();
  const YNode& n = node(id);
  return file() + ":" + std::to_string(n.line) + ":" + std::to_string(n.column);
}

void YamlReader::Fail(uint32_t at, const std::string& field, const std::string& problem) const {
  throw YamlError(Where(at) + ": " + (field.empty() ? "" : "field '" + field + "': ") + problem);
}

namespace {
const char* KindName(const YNode& n) {
  switch (n.type) {
    case YType::kMap: return "a mapping";
    case YType::kSeq: return "a list";
    case YType::kNull: return "nothing (null)";
    default: return "a scalar";
  }
}
}  // namespace

void YamlReader::RequireMap(uint32_t id, const std::string& field) const {
  if (!IsMap(id)) Fail(id, field, std::string("expected a mapping, got ") + KindName(node(id)));
}

void YamlReader::RequireSequence(uint32_t id, const std::string& field) const {
  if (!IsSequence(id)) Fail(id, field, std::string("expected a list, got ") + KindName(node(id)));
}

void YamlReader::CheckKeys(uint32_t map, const std::string& field,
                           const std::vector<std::string>& allowed) const {
  RequireMap(map, field);
  const std::vector<uint32_t>& items = node(map).items;
  for (size_t k = 0; k + 1 < items.size(); k += 2) {
    const uint32_t key_id = items[k];
    if (!IsScalar(key_id)) Fail(key_id, field, "keys must be plain strings");
    const std::string& key = node(key_id).text;
    // YamlDoc rejects keys equal by YAML type (`a` twice); this catches keys
    // written differently with the same text (`on` and "on").
    bool twice = false;
    for (size_t j = 0; j < k && !twice; j += 2) {
      twice = IsScalar(items[j]) && node(items[j]).text == key;
    }
    const std::string path = field.empty() ? key : field + "." + key;
    if (twice) Fail(key_id, path, "given twice");
    bool known = false;
    for (const auto& a : allowed) known = known || a == key;
    if (!known) Fail(key_id, path, "unknown field; allowed: " + JoinNames(allowed));
  }
}

uint32_t YamlReader::Required(uint32_t map, const std::string& field, const std::string& key) const {
  const uint32_t v = Find(map, key);
  if (v == kNone) Fail(map, field.empty() ? key : field + "." + key, "missing (required)");
  return v;
}

const std::string& YamlReader::String(uint32_t id, const std::string& field) const {
  if (!IsScalar(id)) Fail(id, field, std::string("expected a string, got ") + KindName(node(id)));
  return node(id).text;
}

int64_t YamlReader::PositiveInt(uint32_t id, const std::string& field) const {
  const std::string& s = String(id, field);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v <= 0) {
    Fail(id, field, "expected a positive integer, got '" + s + "'");
  }
  return v;
}

bool YamlReader::Bool(uint32_t id, const std::string& field) const {
  const std::string& s = String(id, field);
  if (s == "true") return true;
  if (s == "false") return false;
  Fail(id, field, "expected true or false, got '" + s + "'");
}

uint64_t YamlReader::Bytes(uint32_t id, const std::string& field) const {
  const std::string& s = String(id, field);
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
    const size_t n = std::strlen(u.suffix);
    if (s.size() > n && s.compare(s.size() - n, n, u.suffix) == 0) {
      factor = u.factor;
      number = s.substr(0, s.size() - n);
      break;
    }
  }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || errno != 0 || !(v > 0) || !std::isfinite(v)) {
    Fail(id, field,
         "expected a positive size such as 189GiB (units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), "
         "got '" + s + "'");
  }
  return static_cast<uint64_t>(std::llround(v * factor));
}

std::string YamlReader::Choice(uint32_t id, const std::string& field,
                               const std::vector<std::string>& allowed) const {
  const std::string& s = String(id, field);
  for (const auto& a : allowed) {
    if (a == s) return s;
  }
  Fail(id, field, "'" + s + "' is not allowed; allowed: " + JoinNames(allowed));
}

}  // namespace ix
