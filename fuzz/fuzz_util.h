// Helpers the fuzz targets share: splitting one input into fields, and the
// check that stops the fuzzer when an invariant breaks (a trap, which
// libFuzzer reports as a crash and saves the input for).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace ixfuzz {

// Prints what broke and traps.
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

inline void Check(bool ok, const std::string& what) {
  if (!ok) Fail(what);
}

// `text` cut at every `sep` into at most `max` fields (the last keeps the
// rest, separators included); always at least one field.
inline std::vector<std::string> Split(std::string_view text, char sep, size_t max) {
  std::vector<std::string> out;
  while (out.size() + 1 < max) {
    const size_t at = text.find(sep);
    if (at == std::string_view::npos) break;
    out.emplace_back(text.substr(0, at));
    text.remove_prefix(at + 1);
  }
  out.emplace_back(text);
  return out;
}

inline std::string_view AsText(const unsigned char* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The whole body of a fuzzer that only runs checks on its input as text:
// each check sees the same bytes, in order. LLVMFuzzerTestOneInput's value.
template <class... Checks>
int CheckText(const unsigned char* data, size_t size, Checks... checks) {
  const std::string_view text = AsText(data, size);
  (checks(text), ...);
  return 0;
}

}  // namespace ixfuzz
