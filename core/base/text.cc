#include "core/base/text.h"

#include <cstdio>

namespace ix {

std::string_view Trim(std::string_view s, std::string_view chars) {
  const size_t first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return s.substr(s.size());
  const size_t last = s.find_last_not_of(chars);
  return s.substr(first, last - first + 1);
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, at - start));
    start = at + 1;
  }
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

bool ParseUnsigned(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  out = v;
  return true;
}

bool ParseSigned(std::string_view s, int64_t& out) {
  const bool neg = !s.empty() && s[0] == '-';
  uint64_t v = 0;
  if (!ParseUnsigned(neg ? s.substr(1) : s, v)) return false;
  if (v > static_cast<uint64_t>(INT64_MAX) + (neg ? 1 : 0)) return false;
  out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

std::string Printable(std::string_view s, bool ascii_only) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f || (ascii_only && c > 0x7f)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace ix
