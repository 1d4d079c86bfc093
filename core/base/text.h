// Small text helpers shared by the parsers: trimming, splitting into
// fields and lines, strict decimal numbers (digits only, no sign, no
// spaces, no overflow) for text the kernel or another program wrote, and
// text made safe to print.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ix {

// `s` without leading and trailing characters from `chars` (by default
// blanks and line ends; HTTP's optional whitespace is " \t").
std::string_view Trim(std::string_view s, std::string_view chars = " \t\r\n");

// The fields of `s` between each `sep` (empty fields kept; "" gives one).
std::vector<std::string_view> Split(std::string_view s, char sep);

// The lines of `text` without their '\n' (a last line without one counts;
// a trailing '\n' adds no empty line).
std::vector<std::string_view> Lines(std::string_view text);

// A decimal number of at most 20 digits, nothing else; false otherwise
// (out untouched). ParseSigned also takes one leading '-'.
// `s` safe to print on one line of a log or a table: every byte below 0x20
// and 0x7f (and with `ascii_only`, every byte above it too) as \xHH.
std::string Printable(std::string_view s, bool ascii_only = false);

bool ParseUnsigned(std::string_view s, uint64_t& out);
bool ParseSigned(std::string_view s, int64_t& out);

}  // namespace ix
