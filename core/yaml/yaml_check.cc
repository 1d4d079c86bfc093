// YamlCheck: typed, located reading of a YamlDoc for the matrix loaders.
#include "core/yaml/yaml_check.h"

namespace ix {

std::string FieldPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string FieldIndex(const std::string& parent, size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

void YamlCheck::Fail(uint32_t at, const std::string& path, const std::string& problem) const {
  std::string msg = doc_.Where(at) + ": ";
  if (!key_.empty()) msg += key_ + ": ";
  if (!path.empty()) msg += "field '" + path + "': ";
  msg += problem;
  throw YamlCheckError(msg);
}

void YamlCheck::RequireMap(uint32_t id, const std::string& path) const {
  if (node(id).type != YType::kMap) {
    Fail(id, path, "Input should be a valid dictionary (a mapping), got " + DescribeYaml(node(id)));
  }
}

void YamlCheck::RequireSeq(uint32_t id, const std::string& path) const {
  if (node(id).type != YType::kSeq) {
    Fail(id, path, "Input should be a valid list, got " + DescribeYaml(node(id)));
  }
}

void YamlCheck::CheckKeys(uint32_t map, const std::string& path,
                          std::initializer_list<const char*> allowed) const {
  RequireMap(map, path);
  const YNode& m = node(map);
  for (size_t k = 0; k < m.items.size(); k += 2) {
    const YNode& kn = node(m.items[k]);
    if (kn.type != YType::kString) {
      Fail(m.items[k], path, "keys must be strings, got " + DescribeYaml(kn));
    }
    bool known = false;
    for (const char* a : allowed) known = known || kn.text == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      Fail(m.items[k], FieldPath(path, kn.text),
           "Extra inputs are not permitted (unknown field; allowed: " + list + ")");
    }
  }
}

uint32_t YamlCheck::Required(uint32_t map, const std::string& path, const char* key) const {
  const uint32_t v = doc_.Find(map, key);
  if (v == YamlDoc::kNoNode) Fail(map, FieldPath(path, key), "Field required");
  return v;
}

std::string YamlCheck::Str(uint32_t id, const std::string& path) const {
  if (node(id).type != YType::kString) {
    Fail(id, path, "Input should be a valid string, got " + DescribeYaml(node(id)));
  }
  return node(id).text;
}

int64_t YamlCheck::Int(uint32_t id, const std::string& path) const {
  const YNode& n = node(id);
  if (n.type != YType::kInt) Fail(id, path, "Input should be a valid integer, got " + DescribeYaml(n));
  if (n.overflow) Fail(id, path, "integer " + n.text + " is out of range (at most 2^63-1)");
  return n.i;
}

int64_t YamlCheck::Positive(uint32_t id, const std::string& path) const {
  const int64_t v = Int(id, path);
  if (v <= 0) Fail(id, path, "Input should be greater than 0, got " + std::to_string(v));
  return v;
}

int64_t YamlCheck::NonNegative(uint32_t id, const std::string& path) const {
  const int64_t v = Int(id, path);
  if (v < 0) Fail(id, path, "Input should be greater than or equal to 0, got " + std::to_string(v));
  return v;
}

bool YamlCheck::Bool(uint32_t id, const std::string& path) const {
  if (node(id).type != YType::kBool) {
    Fail(id, path, "Input should be a valid boolean, got " + DescribeYaml(node(id)));
  }
  return node(id).b;
}

double YamlCheck::Number(uint32_t id, const std::string& path) const {
  const YNode& n = node(id);
  if (n.type == YType::kFloat) return n.f;
  if (n.type == YType::kInt && !n.overflow) return static_cast<double>(n.i);
  Fail(id, path, "Input should be a valid number, got " + DescribeYaml(n));
}

std::string YamlCheck::Choice(uint32_t id, const std::string& path,
                              std::initializer_list<const char*> allowed) const {
  const std::string s = Str(id, path);
  std::string list;
  for (const char* a : allowed) {
    if (s == a) return s;
    list += (list.empty() ? "'" : ", '") + std::string(a) + "'";
  }
  Fail(id, path, "Input should be " + list + ", got '" + s + "'");
}

}  // namespace ix
