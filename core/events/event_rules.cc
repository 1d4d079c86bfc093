#include "core/events/event_rules.h"

#include <rapidjson/encodings.h>
#include <rapidjson/memorystream.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>
#include <utility>

#include "core/base/text.h"

namespace ix {
namespace {

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

// [A-Za-z0-9._-]{1,max}, not "." or "..".
bool IsNameOf(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || s == "." || s == "..") return false;
  for (char c : s) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

Status CheckName(std::string_view s, size_t max) {
  if (IsNameOf(s, max)) return Ok{};
  std::string rule = "must be 1 to " + std::to_string(max) + " characters from A-Z a-z 0-9 . _ -, not \".\" or \"..\"";
  // A request target is checked as it came, never decoded: say so when
  // the first character out of the alphabet is a '%'.
  if (!s.empty() && s.size() <= max && s != "." && s != "..") {
    for (char c : s) {
      if (IsNameChar(c)) continue;
      if (c == '%') rule += " (percent-encoding is not decoded)";
      break;
    }
  }
  return Error{std::move(rule)};
}

// `[^:]+:[0-9]+`.
bool IsEventId(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon == 0 || colon == std::string_view::npos || colon + 1 == s.size()) return false;
  for (char c : s.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsEventName(std::string_view s) {
  if (s.empty() || s.size() > kMaxEventNameBytes) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

bool IsStringOf(JsonKind kind, std::string_view text, size_t max) {
  return kind == JsonKind::kString && !text.empty() && text.size() <= max;
}

// The rule of each required field, as its error states it.
std::string IdRule() { return "must be a string of 1 to " + std::to_string(kMaxEventIdBytes) + " bytes, STEP:SEQ"; }
std::string EventNameRule() {
  return "must be 1 to " + std::to_string(kMaxEventNameBytes) + " characters from a-z and _";
}
std::string StepRule() { return "must be a string of 1 to " + std::to_string(kMaxStepBytes) + " bytes"; }
std::string TimeRule() { return "must be a number (unix seconds)"; }

constexpr const char* kRequired[] = {"id", "event", "step", "time"};

std::string RequiredRule(std::string_view field) {
  if (field == "id") return IdRule();
  if (field == "event") return EventNameRule();
  if (field == "step") return StepRule();
  return TimeRule();
}

// What top-level field `key` with this value breaks ("" when it keeps the
// rules, or the field is free).
std::string FieldProblem(std::string_view key, JsonKind kind, std::string_view text, EventStage stage) {
  if (key == "id") {
    if (!IsStringOf(kind, text, kMaxEventIdBytes)) return IdRule();
    if (!IsEventId(text)) {
      return "must be STEP:SEQ (no ':' in STEP, SEQ decimal digits), 1 to " + std::to_string(kMaxEventIdBytes) +
             " bytes";
    }
  } else if (key == "event") {
    if (kind != JsonKind::kString || !IsEventName(text)) return EventNameRule();
  } else if (key == "step") {
    if (!IsStringOf(kind, text, kMaxStepBytes)) return StepRule();
  } else if (key == "time") {
    if (kind != JsonKind::kInteger && kind != JsonKind::kNegative && kind != JsonKind::kNumber) return TimeRule();
  } else if (key == "sweep") {
    if (kind != JsonKind::kString) return "must be a string (or absent)";
    if (Status ok = CheckSweepId(text); !ok) return ok.error().message;
  } else if (key == "entry") {
    if (kind != JsonKind::kInteger) return "must be a non-negative integer (or absent)";
  } else if (key == "node" && stage == EventStage::kStamped) {
    if (!IsStringOf(kind, text, kMaxNodeBytes)) {
      return "must be a string of 1 to " + std::to_string(kMaxNodeBytes) + " bytes (or absent)";
    }
  }
  return "";
}

// Whether the JSON number `text`, which from_chars found out of a double's
// range, is too large rather than too small: its first significant digit
// stands at a positive power of ten. (Too small reads as 0, as it always
// has; too large is refused.)
bool TooLarge(std::string_view text) {
  const size_t e = text.find_first_of("eE");
  int64_t exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view x = text.substr(e + 1);
    const bool negative = !x.empty() && x.front() == '-';
    if (!x.empty() && (x.front() == '-' || x.front() == '+')) x.remove_prefix(1);
    uint64_t magnitude = 0;
    if (!ParseUnsigned(x, magnitude) || magnitude > 1'000'000'000) magnitude = 1'000'000'000;
    exponent = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }
  std::string_view mantissa = text.substr(0, e);
  if (!mantissa.empty() && mantissa.front() == '-') mantissa.remove_prefix(1);
  const size_t dot = mantissa.find('.');
  const std::string_view whole = mantissa.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
  int64_t order = 0;  // the value is in [10^(order-1), 10^order) times 10^exponent
  if (const size_t first = whole.find_first_not_of('0'); first != std::string_view::npos) {
    order = static_cast<int64_t>(whole.size() - first);
  } else if (const size_t f = fraction.find_first_not_of('0'); f != std::string_view::npos) {
    order = -static_cast<int64_t>(f);
  } else {
    return false;  // zero
  }
  return order + exponent > 0;
}

// A JSON number's kind and value: an integer (no fraction or exponent) is
// kInteger when it is 0..INT64_MAX (-0 too), kNegative when it is
// INT64_MIN..-1, else kNumber. Unset when it is too large for a double.
std::optional<std::pair<JsonKind, double>> ReadNumber(std::string_view text) {
  double value = 0;
  const std::from_chars_result r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec == std::errc::result_out_of_range) {
    if (TooLarge(text)) return std::nullopt;
    value = 0;
  } else if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;  // not a JSON number: "inf" or "nan" from a value that was not finite
  }
  if (text.find_first_of(".eE") != std::string_view::npos) return std::pair{JsonKind::kNumber, value};
  const bool negative = !text.empty() && text.front() == '-';
  uint64_t magnitude = 0;
  if (!ParseUnsigned(negative ? text.substr(1) : text, magnitude)) return std::pair{JsonKind::kNumber, value};
  const uint64_t int64_max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (magnitude == 0 || (!negative && magnitude <= int64_max)) return std::pair{JsonKind::kInteger, value};
  if (negative && magnitude <= int64_max + 1) return std::pair{JsonKind::kNegative, value};
  return std::pair{JsonKind::kNumber, value};
}

// Whether `s` is UTF-8 as kParseValidateEncodingFlag checks text. A string
// or key can be valid JSON and still not be: RapidJSON 1.1.0 decodes an
// escaped lone low surrogate ("\udc00") into the bytes of one, which no
// reader that checks UTF-8 takes back (fuzz/agent_event_fuzz found it).
bool IsValidUtf8(std::string_view s) {
  struct Discard {
    void Put(char) {}
  } out;
  rapidjson::MemoryStream in(s.data(), s.size());
  while (in.Tell() < s.size()) {
    if (!rapidjson::UTF8<>::Validate(in, out)) return false;
  }
  return true;
}

constexpr char kNotUtf8[] = "holds a string that is not UTF-8 (an escaped unpaired surrogate)";

// `s` cut to 40 bytes, with control and non-ASCII bytes as \xNN, for errors.
std::string Excerpt(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (s.size() > 40) out += "...";
  return out;
}

std::string KindName(JsonKind kind, std::string_view text) {
  switch (kind) {
    case JsonKind::kNull: return "null";
    case JsonKind::kBool: return "a boolean";
    case JsonKind::kInteger: return "an integer";
    case JsonKind::kNegative: return "a negative integer";
    case JsonKind::kNumber: return "a number";
    case JsonKind::kString: return "a string \"" + Excerpt(text) + "\"";
    case JsonKind::kObject: return "an object";
    case JsonKind::kArray: return "an array";
  }
  return "?";
}

}  // namespace

bool IsValidSweepId(std::string_view s) { return IsNameOf(s, kMaxSweepIdBytes); }
bool IsValidResultName(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return IsNameOf(s, kMaxResultNameBytes);
  return s.size() <= kMaxResultNameBytes && IsNameOf(s.substr(0, slash), kMaxResultNameBytes) &&
         IsNameOf(s.substr(slash + 1), kMaxResultNameBytes);
}
Status CheckSweepId(std::string_view s) { return CheckName(s, kMaxSweepIdBytes); }
Status CheckResultName(std::string_view s) {
  if (IsValidResultName(s)) return Ok{};
  // The rule of a part, said for the first part that breaks it (or the
  // whole name when no part does: it is too long).
  const size_t slash = s.find('/');
  Status part = CheckName(slash == std::string_view::npos ? s : s.substr(0, slash), kMaxResultNameBytes);
  if (part && slash != std::string_view::npos) part = CheckName(s.substr(slash + 1), kMaxResultNameBytes);
  const std::string rule = part ? CheckName("", kMaxResultNameBytes).error().message : part.error().message;
  return Error{"must be NAME or DIR/NAME of at most " + std::to_string(kMaxResultNameBytes) + " bytes, each part " +
               rule.substr(std::string("must be ").size())};
}

bool EventChecker::Scalar(JsonKind kind, std::string_view text) {
  if (depth_ == 0) return Fail("", done_ ? "must be one JSON object" : "must be a JSON object");
  if (kind == JsonKind::kString && !IsValidUtf8(text)) return Fail(key_, kNotUtf8, KindName(kind, text));
  return depth_ > 1 || CheckField(kind, text, 0);
}

bool EventChecker::Number(std::string_view text) {
  if (depth_ == 0) return Fail("", done_ ? "must be one JSON object" : "must be a JSON object");
  const std::optional<std::pair<JsonKind, double>> number = ReadNumber(text);
  if (!number) return Fail(key_, "holds a number beyond the range of a double", "a number " + Excerpt(text));
  return depth_ > 1 || CheckField(number->first, text, number->second);
}

bool EventChecker::Key(std::string_view key) {
  if (!IsValidUtf8(key)) return Fail(depth_ == 1 ? "" : key_, kNotUtf8, "a key \"" + Excerpt(key) + "\"");
  if (depth_ != 1) return true;
  key_.assign(key);
  if (!seen_.insert(key_).second) return Fail("", "field \"" + Excerpt(key) + "\" appears more than once");
  return true;
}

bool EventChecker::Open(JsonKind kind) {
  if (depth_ == 0 && (done_ || kind != JsonKind::kObject)) {
    return Fail("", done_ ? "must be one JSON object" : "must be a JSON object");
  }
  if (++depth_ > kMaxEventDepth) {
    return Fail("", "nests objects and arrays deeper than " + std::to_string(kMaxEventDepth) + " levels");
  }
  return depth_ != 2 || CheckField(kind, "", 0);
}

bool EventChecker::Close() {
  if (depth_ == 0) return Fail("", "closes more than it opened");
  if (--depth_ > 0) return true;
  for (const char* field : kRequired) {
    if (seen_.count(std::string_view(field)) == 0) return Fail(field, "missing; " + RequiredRule(field));
  }
  done_ = true;
  return true;
}

bool EventChecker::CheckField(JsonKind kind, std::string_view text, double number) {
  std::string rule = FieldProblem(key_, kind, text, stage_);
  if (!rule.empty()) return Fail(key_, std::move(rule), KindName(kind, text));
  Keep(kind, text, number);
  return true;
}

// The value of a protocol field that kept its rule, into fields_.
void EventChecker::Keep(JsonKind kind, std::string_view text, double number) {
  if (key_ == "id") {
    fields_.id = text;
  } else if (key_ == "event") {
    fields_.event = text;
  } else if (key_ == "step") {
    fields_.step = text;
  } else if (key_ == "time") {
    fields_.time = number;
  } else if (key_ == "sweep") {
    fields_.sweep = std::string(text);
  } else if (key_ == "entry") {
    int64_t exact = 0;  // kInteger: decimal digits within int64 (or -0), so this reads
    (void)ParseSigned(text, exact);
    fields_.entry = exact;
  } else if (key_ == "node" && stage_ == EventStage::kStamped && kind == JsonKind::kString) {
    fields_.node = std::string(text);
  }
}

bool EventChecker::Fail(std::string field, std::string rule, std::string got) {
  problem_ = EventProblem{std::move(field), std::move(rule), std::move(got)};
  return false;
}

Status CheckEventSize(size_t compact_bytes) {
  if (compact_bytes <= kMaxEventBytes) return Ok{};
  return Error{"is " + std::to_string(compact_bytes) + " bytes as compact JSON; at most " +
               std::to_string(kMaxEventBytes) + " are allowed"};
}

}  // namespace ix
