// YAML 1.1 typing of scalars as PyYAML does it: the Resolver's implicit
// regular expressions (written out by hand) for plain scalars, and
// SafeConstructor's int, float and bool construction, for plain and tagged
// scalars alike.
#include "core/yaml/yaml_scalar.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

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

bool IsTrueWord(const std::string& s) {
  static const char* const kTrue[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
  for (const char* t : kTrue) {
    if (s == t) return true;
  }
  return false;
}

bool IsFalseWord(const std::string& s) {
  static const char* const kFalse[] = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
  for (const char* f : kFalse) {
    if (s == f) return true;
  }
  return false;
}

}  // namespace

void ResolvePlainScalar(YNode& n) {
  const std::string& s = n.text;
  const char first = s.empty() ? '\0' : s[0];
  auto in = [first](const char* set) { return first != '\0' && std::strchr(set, first) != nullptr; };
  if (in("yYnNtTfFoO") && (IsTrueWord(s) || IsFalseWord(s))) {
    n.type = YType::kBool;
    n.b = IsTrueWord(s);
    return;
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

bool ResolveTaggedScalar(std::string_view tag, YNode& n, std::string& problem) {
  if (tag == "!" || tag == "tag:yaml.org,2002:str") {
    n.type = YType::kString;
    return true;
  }
  if (tag == "tag:yaml.org,2002:int") {
    if (MatchInt(n.text)) {
      ConstructInt(n.text, n);
      if (n.type == YType::kInt) return true;
    }
    problem = "invalid literal for an integer: '" + n.text + "'";
    return false;
  }
  if (tag == "tag:yaml.org,2002:float") {
    if (ConstructFloat(n.text, n)) return true;
    problem = "could not convert to a float: '" + n.text + "'";
    return false;
  }
  if (tag == "tag:yaml.org,2002:bool") {
    std::string lower;
    for (char c : n.text) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower == "yes" || lower == "true" || lower == "on" || lower == "no" || lower == "false" || lower == "off") {
      n.type = YType::kBool;
      n.b = lower == "yes" || lower == "true" || lower == "on";
      return true;
    }
    problem = "not a boolean: '" + n.text + "'";
    return false;
  }
  if (tag == "tag:yaml.org,2002:null") {
    n.type = YType::kNull;
    return true;
  }
  problem = "unsupported tag '" + std::string(tag) + "'";
  return false;
}

}  // namespace ix
