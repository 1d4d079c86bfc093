#include "core/yaml/yaml_document.h"

#include <yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <unordered_map>

namespace ix {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// A cursor over a scalar for the hand-written YAML 1.1 regular expressions.
struct Cur {
  std::string_view s;
  size_t p = 0;
  bool End() const { return p == s.size(); }
  bool Eat(char c) {
    if (p < s.size() && s[p] == c) return ++p, true;
    return false;
  }
  bool EatSign() { return Eat('-') || Eat('+'); }
  // Consumes chars while pred; returns how many.
  template <class F>
  size_t While(F pred) {
    const size_t start = p;
    while (p < s.size() && pred(s[p])) ++p;
    return p - start;
  }
  bool EatWord(std::string_view w) {
    if (s.substr(p, w.size()) == w) return p += w.size(), true;
    return false;
  }
};

bool DigitOrUnderscore(char c) { return IsDigit(c) || c == '_'; }

// [eE][-+][0-9]+ (optional)
bool OptExponent(Cur& c) {
  const size_t save = c.p;
  if (c.Eat('e') || c.Eat('E')) {
    if (c.EatSign() && c.While(IsDigit) > 0) return true;
    c.p = save;
    return false;
  }
  return true;
}

// (:[0-5]?[0-9])+
bool SexagesimalTail(Cur& c) {
  size_t groups = 0;
  while (c.Eat(':')) {
    if (c.p < c.s.size() && c.s[c.p] >= '0' && c.s[c.p] <= '5' && c.p + 1 < c.s.size() &&
        IsDigit(c.s[c.p + 1])) {
      c.p += 2;
    } else if (c.p < c.s.size() && IsDigit(c.s[c.p])) {
      c.p += 1;
    } else {
      return false;
    }
    ++groups;
  }
  return groups > 0;
}

bool MatchFloat(std::string_view s) {
  {  // [-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)?
    Cur c{s};
    c.EatSign();
    if (c.p < s.size() && IsDigit(s[c.p]) && (c.While(DigitOrUnderscore), c.Eat('.'))) {
      c.While(DigitOrUnderscore);
      if (OptExponent(c) && c.End()) return true;
    }
  }
  {  // \.[0-9][0-9_]*([eE][-+][0-9]+)?
    Cur c{s};
    if (c.Eat('.') && c.p < s.size() && IsDigit(s[c.p])) {
      c.While(DigitOrUnderscore);
      if (OptExponent(c) && c.End()) return true;
    }
  }
  {  // [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
    Cur c{s};
    c.EatSign();
    if (c.p < s.size() && IsDigit(s[c.p])) {
      c.While(DigitOrUnderscore);
      if (SexagesimalTail(c) && c.Eat('.')) {
        c.While(DigitOrUnderscore);
        if (c.End()) return true;
      }
    }
  }
  {  // [-+]?\.(inf|Inf|INF)
    Cur c{s};
    c.EatSign();
    if (c.Eat('.') && (c.EatWord("inf") || c.EatWord("Inf") || c.EatWord("INF")) && c.End()) {
      return true;
    }
  }
  return s == ".nan" || s == ".NaN" || s == ".NAN";
}

bool MatchInt(std::string_view s) {
  {  // [-+]?0b[0-1_]+
    Cur c{s};
    c.EatSign();
    if (c.EatWord("0b") && c.While([](char x) { return x == '0' || x == '1' || x == '_'; }) > 0 &&
        c.End()) {
      return true;
    }
  }
  {  // [-+]?0[0-7_]+
    Cur c{s};
    c.EatSign();
    if (c.Eat('0') && c.While([](char x) { return (x >= '0' && x <= '7') || x == '_'; }) > 0 &&
        c.End()) {
      return true;
    }
  }
  {  // [-+]?(0|[1-9][0-9_]*)
    Cur c{s};
    c.EatSign();
    if (c.Eat('0') && c.End()) return true;
    c = Cur{s};
    c.EatSign();
    if (c.p < s.size() && s[c.p] >= '1' && s[c.p] <= '9') {
      c.While(DigitOrUnderscore);
      if (c.End()) return true;
    }
  }
  {  // [-+]?0x[0-9a-fA-F_]+
    Cur c{s};
    c.EatSign();
    if (c.EatWord("0x") && c.While([](char x) { return IsHex(x) || x == '_'; }) > 0 && c.End()) {
      return true;
    }
  }
  {  // [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+
    Cur c{s};
    c.EatSign();
    if (c.p < s.size() && s[c.p] >= '1' && s[c.p] <= '9') {
      c.While(DigitOrUnderscore);
      if (SexagesimalTail(c) && c.End()) return true;
    }
  }
  return false;
}

bool MatchTimestamp(std::string_view s) {
  auto digits = [](Cur& c, size_t min, size_t max) {
    const size_t n = c.While(IsDigit);
    return n >= min && n <= max;
  };
  {
    Cur c{s};
    if (digits(c, 4, 4) && c.Eat('-') && digits(c, 2, 2) && c.Eat('-') && digits(c, 2, 2) &&
        c.End()) {
      return true;
    }
  }
  Cur c{s};
  if (!(digits(c, 4, 4) && c.Eat('-') && digits(c, 1, 2) && c.Eat('-') && digits(c, 1, 2))) {
    return false;
  }
  if (!(c.Eat('T') || c.Eat('t') || c.While([](char x) { return x == ' ' || x == '\t'; }) > 0)) {
    return false;
  }
  if (!(digits(c, 1, 2) && c.Eat(':') && digits(c, 2, 2) && c.Eat(':') && digits(c, 2, 2))) {
    return false;
  }
  if (c.Eat('.')) c.While(IsDigit);
  const size_t save = c.p;
  c.While([](char x) { return x == ' ' || x == '\t'; });
  if (c.Eat('Z')) return c.End();
  if (c.EatSign()) {
    if (!digits(c, 1, 2)) return false;
    if (c.Eat(':') && !digits(c, 2, 2)) return false;
    return c.End();
  }
  c.p = save;
  return c.End();
}

// SafeConstructor.construct_yaml_int on text that MatchInt accepted.
void ConstructInt(std::string_view text, YNode& n) {
  std::string v;
  v.reserve(text.size());
  for (char ch : text) {
    if (ch != '_') v += ch;
  }
  bool neg = false;
  size_t p = 0;
  if (p < v.size() && (v[p] == '-' || v[p] == '+')) neg = v[p++] == '-';
  const std::string_view body(v.data() + p, v.size() - p);
  unsigned base = 10;
  std::string_view digits = body;
  bool sexagesimal = false;
  if (body == "0") {
    digits = "0";
  } else if (body.size() >= 2 && body[0] == '0' && body[1] == 'b') {
    base = 2, digits = body.substr(2);
  } else if (body.size() >= 2 && body[0] == '0' && body[1] == 'x') {
    base = 16, digits = body.substr(2);
  } else if (!body.empty() && body[0] == '0') {
    base = 8;
  } else if (body.find(':') != std::string_view::npos) {
    sexagesimal = true;
  }
  n.type = YType::kInt;
  n.overflow = false;
  // Accumulate the magnitude; INT64_MIN's magnitude is INT64_MAX + 1.
  const uint64_t limit = static_cast<uint64_t>(INT64_MAX) + (neg ? 1u : 0u);
  uint64_t acc = 0;
  bool over = false;
  auto step = [&](uint64_t mul, uint64_t add) {
    if (over || add > limit || acc > (limit - add) / mul) {
      over = true;
      return;
    }
    acc = acc * mul + add;
  };
  if (digits.empty()) {  // "0b_": PyYAML itself fails here
    n.type = YType::kString;
    return;
  }
  if (sexagesimal) {
    size_t start = 0;
    while (start <= digits.size() && !over) {
      size_t end = digits.find(':', start);
      if (end == std::string_view::npos) end = digits.size();
      uint64_t part = 0;
      for (size_t k = start; k < end; ++k) part = part * 10 + static_cast<unsigned>(digits[k] - '0');
      if (end - start > 18) over = true;
      step(60, 0);
      step(1, part);
      start = end + 1;
    }
  } else {
    for (char ch : digits) {
      const unsigned d = IsDigit(ch) ? static_cast<unsigned>(ch - '0')
                                     : static_cast<unsigned>((ch | 0x20) - 'a' + 10);
      step(base, d);
    }
  }
  if (over) {
    n.overflow = true;
    n.i = 0;
    return;
  }
  n.i = neg ? (acc == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(acc))
            : static_cast<int64_t>(acc);
}

// SafeConstructor.construct_yaml_float; false when strtod rejects the text.
bool ConstructFloat(std::string_view text, YNode& n) {
  std::string v;
  for (char ch : text) {
    if (ch != '_') v += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  }
  double sign = 1;
  size_t p = 0;
  if (p < v.size() && (v[p] == '-' || v[p] == '+')) sign = v[p++] == '-' ? -1 : 1;
  const std::string body = v.substr(p);
  n.type = YType::kFloat;
  if (body == ".inf") {
    n.f = sign * HUGE_VAL;
    return true;
  }
  if (body == ".nan") {
    n.f = std::nan("");
    return true;
  }
  auto parse = [](const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtod(s.c_str(), &end);
    return *end == '\0';
  };
  if (body.find(':') != std::string::npos) {
    double acc = 0;
    size_t start = 0;
    while (start <= body.size()) {
      size_t end = body.find(':', start);
      if (end == std::string::npos) end = body.size();
      double part = 0;
      if (!parse(body.substr(start, end - start), part)) return false;
      acc = acc * 60 + part;
      start = end + 1;
    }
    n.f = sign * acc;
    return true;
  }
  double out = 0;
  if (!parse(body, out)) return false;
  n.f = sign * out;
  return true;
}

}  // namespace

void ResolvePlainScalar(YNode& n) {
  const std::string& s = n.text;
  const char first = s.empty() ? '\0' : s[0];
  auto in = [first](const char* set) { return first != '\0' && std::strchr(set, first) != nullptr; };
  if (in("yYnNtTfFoO")) {
    static const char* const kTrue[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const char* const kFalse[] = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
    for (const char* t : kTrue) {
      if (s == t) return void((n.type = YType::kBool, n.b = true));
    }
    for (const char* f : kFalse) {
      if (s == f) return void((n.type = YType::kBool, n.b = false));
    }
  }
  if (in("-+0123456789.") && MatchFloat(s) && ConstructFloat(s, n)) return;
  if (in("-+0123456789") && MatchInt(s)) {
    ConstructInt(s, n);
    if (n.type == YType::kInt) return;
  }
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    n.type = YType::kNull;
    return;
  }
  if (in("0123456789") && MatchTimestamp(s)) {
    n.type = YType::kTimestamp;
    return;
  }
  n.type = YType::kString;
}

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

// YamlBuilder: turns libyaml's event stream into a YamlDoc (composer +
// constructor of PyYAML in one pass).
class YamlBuilder {
 public:
  YamlBuilder(std::string_view text, const std::string& name) : text_(text) { doc_.name_ = name; }

  Result<YamlDoc> Run() {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return Error{doc_.name_ + ": not valid YAML: out of memory"};
    std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> guard(&parser, yaml_parser_delete);
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text_.data()),
                                 text_.size());
    doc_.nodes_.reserve(text_.size() / 12 + 16);
    int documents = 0;
    for (;;) {
      yaml_event_t ev;
      if (!yaml_parser_parse(&parser, &ev)) return ParserError(parser);
      std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> ev_guard(&ev, yaml_event_delete);
      const uint32_t line = static_cast<uint32_t>(ev.start_mark.line) + 1;
      const uint32_t column = static_cast<uint32_t>(ev.start_mark.column) + 1;
      switch (ev.type) {
        case YAML_STREAM_END_EVENT:
          if (doc_.root_ == YamlDoc::kNoNode) {
            YNode null_root;
            null_root.line = 1, null_root.column = 1;
            doc_.root_ = Add(std::move(null_root));
          }
          return std::move(doc_);
        case YAML_DOCUMENT_START_EVENT:
          if (++documents > 1) {
            return Fail(line, column, "expected a single document in the stream, but found another document");
          }
          break;
        case YAML_ALIAS_EVENT: {
          const std::string anchor = reinterpret_cast<const char*>(ev.data.alias.anchor);
          auto it = anchors_.find(anchor);
          if (it == anchors_.end()) return Fail(line, column, "found undefined alias '" + anchor + "'");
          if (!done_[it->second]) {
            return Fail(line, column, "recursive alias '" + anchor + "' is not supported");
          }
          if (!Attach(it->second, line, column)) return err_;
          break;
        }
        case YAML_SCALAR_EVENT: {
          YNode n;
          n.line = line, n.column = column;
          n.text.assign(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
          const char* tag = reinterpret_cast<const char*>(ev.data.scalar.tag);
          bool merge = false;
          if (tag == nullptr && ev.data.scalar.plain_implicit) {
            if (n.text == "<<") {
              merge = true;
              n.type = YType::kString;
            } else {
              ResolvePlainScalar(n);
            }
          } else if (tag == nullptr || std::strcmp(tag, "!") == 0 ||
                     std::strcmp(tag, "tag:yaml.org,2002:str") == 0) {
            n.type = YType::kString;
          } else if (!ApplyTag(tag, n)) {
            return err_;
          }
          const uint32_t id = Add(std::move(n));
          if (merge) is_merge_[id] = 1, any_merge_ = true;
          done_[id] = 1;
          weight_[id] = 1;
          if (!Anchor(ev.data.scalar.anchor, id) || !Attach(id, line, column)) return err_;
          break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
          const bool is_map = ev.type == YAML_MAPPING_START_EVENT;
          const char* tag = reinterpret_cast<const char*>(is_map ? ev.data.mapping_start.tag
                                                                 : ev.data.sequence_start.tag);
          const char* want = is_map ? "tag:yaml.org,2002:map" : "tag:yaml.org,2002:seq";
          if (tag != nullptr && std::strcmp(tag, "!") != 0 && std::strcmp(tag, want) != 0) {
            return Fail(line, column, std::string("unsupported tag '") + tag + "'");
          }
          YNode n;
          n.type = is_map ? YType::kMap : YType::kSeq;
          n.line = line, n.column = column;
          const uint32_t id = Add(std::move(n));
          if (!Anchor(is_map ? ev.data.mapping_start.anchor : ev.data.sequence_start.anchor, id) ||
              !Attach(id, line, column)) {
            return err_;
          }
          stack_.push_back(id);
          break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
          const uint32_t id = stack_.back();
          stack_.pop_back();
          if (doc_.nodes_[id].type == YType::kMap && !FinishMap(id)) return err_;
          uint64_t w = 1;
          for (uint32_t child : doc_.nodes_[id].items) w += weight_[child];
          if (w > YamlDoc::kMaxExpandedNodes) {
            return Fail(doc_.nodes_[id].line, doc_.nodes_[id].column,
                        "aliases expand the document beyond " +
                            std::to_string(YamlDoc::kMaxExpandedNodes) + " nodes");
          }
          weight_[id] = w;
          done_[id] = 1;
          break;
        }
        default:
          break;
      }
    }
  }

 private:
  uint32_t Add(YNode n) {
    doc_.nodes_.push_back(std::move(n));
    done_.push_back(0);
    is_merge_.push_back(0);
    weight_.push_back(0);
    return static_cast<uint32_t>(doc_.nodes_.size() - 1);
  }

  Error Fail(uint32_t line, uint32_t column, const std::string& what) {
    err_ = Error{doc_.name_ + ":" + std::to_string(line) + ":" + std::to_string(column) +
                 ": not valid YAML: " + what};
    return err_;
  }

  Error ParserError(const yaml_parser_t& p) {
    std::string what = p.problem ? p.problem : "unknown error";
    size_t line = p.problem_mark.line + 1, column = p.problem_mark.column + 1;
    if (p.error == YAML_READER_ERROR) {
      // Reader errors carry a byte offset, not a mark.
      line = 1, column = 1;
      for (size_t k = 0; k < p.problem_offset && k < text_.size(); ++k) {
        if (text_[k] == '\n') {
          ++line, column = 1;
        } else {
          ++column;
        }
      }
      if (p.problem_value != -1) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " (#x%X)", static_cast<unsigned>(p.problem_value));
        what += buf;
      }
    }
    if (p.context) {
      what += std::string(" (") + p.context + " at line " + std::to_string(p.context_mark.line + 1) +
              ", column " + std::to_string(p.context_mark.column + 1) + ")";
    }
    return Fail(static_cast<uint32_t>(line), static_cast<uint32_t>(column), what);
  }

  bool ApplyTag(const char* tag, YNode& n) {
    const std::string t = tag;
    if (t == "tag:yaml.org,2002:int") {
      if (MatchInt(n.text)) {
        ConstructInt(n.text, n);
        if (n.type == YType::kInt) return true;
      }
      Fail(n.line, n.column, "invalid literal for an integer: '" + n.text + "'");
      return false;
    }
    if (t == "tag:yaml.org,2002:float") {
      if (ConstructFloat(n.text, n)) return true;
      Fail(n.line, n.column, "could not convert to a float: '" + n.text + "'");
      return false;
    }
    if (t == "tag:yaml.org,2002:bool") {
      std::string lower;
      for (char c : n.text) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      if (lower == "yes" || lower == "true" || lower == "on") return n.type = YType::kBool, n.b = true, true;
      if (lower == "no" || lower == "false" || lower == "off") return n.type = YType::kBool, n.b = false, true;
      Fail(n.line, n.column, "not a boolean: '" + n.text + "'");
      return false;
    }
    if (t == "tag:yaml.org,2002:null") return n.type = YType::kNull, true;
    Fail(n.line, n.column, "unsupported tag '" + t + "'");
    return false;
  }

  bool Anchor(const unsigned char* anchor, uint32_t id) {
    if (anchor != nullptr) anchors_[reinterpret_cast<const char*>(anchor)] = id;
    return true;
  }

  // Appends node `id` to the open collection, or makes it the root.
  bool Attach(uint32_t id, uint32_t /*line*/, uint32_t /*column*/) {
    if (stack_.empty()) {
      doc_.root_ = id;
      return true;
    }
    doc_.nodes_[stack_.back()].items.push_back(id);
    return true;
  }

  static std::string KeyIdentity(const YNode& k) {
    switch (k.type) {
      case YType::kString: return "s" + k.text;
      case YType::kInt: return k.overflow ? "I" + k.text : "i" + std::to_string(k.i);
      case YType::kBool: return k.b ? "b1" : "b0";
      case YType::kNull: return "n";
      default: return "o" + k.text;
    }
  }

  // PyYAML's flatten_mapping followed by dict construction: merged keys
  // first, explicit keys override their values; a key written twice
  // explicitly is an error (PyYAML would keep the last one silently).
  bool FinishMap(uint32_t id) {
    std::vector<uint32_t> items = std::move(doc_.nodes_[id].items);
    std::vector<uint32_t> merged;
    std::vector<uint32_t> own;

    for (size_t k = 0; k + 1 < items.size(); k += 2) {
      const uint32_t key = items[k], value = items[k + 1];
      const YNode& kn = doc_.nodes_[key];
      if (any_merge_ && is_merge_[key]) {
        const YNode& vn = doc_.nodes_[value];
        if (vn.type == YType::kMap) {
          merged.insert(merged.end(), vn.items.begin(), vn.items.end());
        } else if (vn.type == YType::kSeq) {
          for (auto it = vn.items.rbegin(); it != vn.items.rend(); ++it) {
            const YNode& sub = doc_.nodes_[*it];
            if (sub.type != YType::kMap) {
              Fail(sub.line, sub.column, "expected a mapping for merging, but found " + DescribeYaml(sub));
              return false;
            }
            merged.insert(merged.end(), sub.items.begin(), sub.items.end());
          }
        } else {
          Fail(vn.line, vn.column,
               "expected a mapping or list of mappings for merging, but found " + DescribeYaml(vn));
          return false;
        }
        continue;
      }
      if (kn.type == YType::kMap || kn.type == YType::kSeq) {
        Fail(kn.line, kn.column, "mapping keys must be scalars, found " + DescribeYaml(kn));
        return false;
      }
      own.push_back(key);
      own.push_back(value);
    }
    // Explicit keys given twice.
    std::unordered_map<std::string, size_t> seen;
    const bool big = own.size() > 32;
    for (size_t k = 0; k < own.size(); k += 2) {
      const YNode& kn = doc_.nodes_[own[k]];
      bool dup = false;
      if (big) {
        dup = !seen.emplace(KeyIdentity(kn), k).second;
      } else {
        const std::string ident = KeyIdentity(kn);
        for (size_t j = 0; j < k && !dup; j += 2) dup = KeyIdentity(doc_.nodes_[own[j]]) == ident;
      }
      if (dup) {
        Fail(kn.line, kn.column, "mapping key '" + kn.text + "' is given twice");
        return false;
      }
    }
    if (merged.empty()) {
      doc_.nodes_[id].items = std::move(own);
      return true;
    }
    std::vector<uint32_t> out;
    std::unordered_map<std::string, size_t> pos;
    merged.insert(merged.end(), own.begin(), own.end());
    for (size_t k = 0; k + 1 < merged.size(); k += 2) {
      const std::string ident = KeyIdentity(doc_.nodes_[merged[k]]);
      auto [it, fresh] = pos.emplace(ident, out.size());
      if (fresh) {
        out.push_back(merged[k]);
        out.push_back(merged[k + 1]);
      } else {
        out[it->second + 1] = merged[k + 1];
      }
    }
    doc_.nodes_[id].items = std::move(out);
    return true;
  }

  std::string_view text_;
  YamlDoc doc_;
  Error err_;
  std::vector<uint32_t> stack_;
  std::vector<uint8_t> done_;
  std::vector<uint64_t> weight_;
  std::vector<uint8_t> is_merge_;
  bool any_merge_ = false;
  std::unordered_map<std::string, uint32_t> anchors_;
};

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

Result<YamlDoc> YamlDoc::Parse(std::string_view text, const std::string& name) {
  return YamlBuilder(text, name).Run();
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
