#include "submitter/results/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/matrix/matrix_json.h"  // AppendJsonString: Python's ensure_ascii escaping

namespace ix {
namespace {

// The shortest round-trip digits of |x| and its decimal point position
// (x = 0.DIGITS * 10^decpt), as Python's dtoa mode 0 gives them.
void ShortestDigits(double x, std::string& digits, int& decpt) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(x), std::chars_format::scientific);
  const std::string s(buf, r.ptr);  // "d.ddde+XX"
  const size_t e = s.find('e');
  digits.clear();
  for (size_t i = 0; i < e; ++i) {
    if (s[i] != '.') digits += s[i];
  }
  decpt = std::atoi(s.c_str() + e + 1) + 1;
}

void Dump(std::string& out, const rapidjson::Value& v, int indent, int level);

// An object's members or an array's elements between `open` and `close`
// as json.dumps lays them out: each after the separator and a new indented
// line (with indent > 0), the close on a line of its own; `{}` or `[]` when
// there are none. `dump_item` appends one item.
template <class Items, class DumpItem>
void DumpContainer(std::string& out, const Items& items, char open, char close, int indent, int level,
                   DumpItem&& dump_item) {
  out += open;
  if (items.begin() == items.end()) return void(out += close);
  const std::string nl = indent > 0 ? "\n" + std::string(static_cast<size_t>(indent * (level + 1)), ' ') : "";
  const char* sep = indent > 0 ? "," : ", ";
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += sep;
    first = false;
    out += nl;
    dump_item(item);
  }
  if (indent > 0) out += "\n" + std::string(static_cast<size_t>(indent * level), ' ');
  out += close;
}

void Dump(std::string& out, const rapidjson::Value& v, int indent, int level) {
  if (v.IsObject()) {
    DumpContainer(out, v.GetObject(), '{', '}', indent, level, [&](const auto& m) {
      AppendJsonString(out, std::string_view(m.name.GetString(), m.name.GetStringLength()));
      out += ": ";
      Dump(out, m.value, indent, level + 1);
    });
  } else if (v.IsArray()) {
    DumpContainer(out, v.GetArray(), '[', ']', indent, level,
                  [&](const rapidjson::Value& e) { Dump(out, e, indent, level + 1); });
  } else if (v.IsString()) {
    AppendJsonString(out, std::string_view(v.GetString(), v.GetStringLength()));
  } else if (v.IsBool()) {
    out += v.GetBool() ? "true" : "false";
  } else if (v.IsNull()) {
    out += "null";
  } else if (v.IsInt64()) {
    out += std::to_string(v.GetInt64());
  } else if (v.IsUint64()) {
    out += std::to_string(v.GetUint64());
  } else {
    out += PyFloatRepr(v.GetDouble());
  }
}

}  // namespace

std::string PyFloatRepr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  std::string d;
  int decpt = 0;
  ShortestDigits(x, d, decpt);
  std::string out = x < 0 ? "-" : "";
  if (decpt > -4 && decpt <= 16) {  // Python's repr: fixed notation
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + d;
    } else if (static_cast<size_t>(decpt) >= d.size()) {
      out += d + std::string(static_cast<size_t>(decpt) - d.size(), '0') + ".0";
    } else {
      out += d.substr(0, static_cast<size_t>(decpt)) + "." + d.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += d.substr(0, 1);
  if (d.size() > 1) out += "." + d.substr(1);
  const int e = decpt - 1;
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", e < 0 ? '-' : '+', std::abs(e));
  return out + exp;
}

std::string PyJsonDumps(const rapidjson::Value& v, int indent) {
  std::string out;
  Dump(out, v, indent, 0);
  return out;
}

double PyRound(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", ndigits, x);
  return std::strtod(buf, nullptr);
}

void PyRoundFloats(rapidjson::Value& v, int ndigits) {
  if (v.IsObject()) {
    // By position: a non-const member loop's != is ambiguous under clang's C++20 rules.
    for (rapidjson::SizeType i = 0; i < v.MemberCount(); ++i) PyRoundFloats((v.MemberBegin() + i)->value, ndigits);
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) PyRoundFloats(e, ndigits);
  } else if (v.IsDouble() && std::isfinite(v.GetDouble())) {
    const double r = PyRound(v.GetDouble(), ndigits);
    // int(r): beyond int64 the value keeps its float form (Python would
    // print every digit; no metric gets near 9.2e18).
    if (std::fabs(r) >= 1 && r == std::trunc(r) && std::fabs(r) < 9.2e18) v.SetInt64(static_cast<int64_t>(r));
    else v.SetDouble(r);
  }
}

}  // namespace ix
