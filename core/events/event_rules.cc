#include "core/events/event_rules.h"

#include <cstdio>
#include <utility>

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

// `s` cut to 40 bytes, with control and non-ASCII bytes as \xNN, for errors.
std::string Printable(std::string_view s) {
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
    case JsonKind::kString: return "a string \"" + Printable(text) + "\"";
    case JsonKind::kObject: return "an object";
    case JsonKind::kArray: return "an array";
  }
  return "?";
}

}  // namespace

bool IsValidSweepId(std::string_view s) { return IsNameOf(s, kMaxSweepIdBytes); }
bool IsValidResultName(std::string_view s) { return IsNameOf(s, kMaxResultNameBytes); }
Status CheckSweepId(std::string_view s) { return CheckName(s, kMaxSweepIdBytes); }
Status CheckResultName(std::string_view s) { return CheckName(s, kMaxResultNameBytes); }

bool EventChecker::Scalar(JsonKind kind, std::string_view text) {
  if (depth_ == 0) return Fail("", done_ ? "must be one JSON object" : "must be a JSON object");
  return depth_ > 1 || CheckField(kind, text);
}

bool EventChecker::Key(std::string_view key) {
  if (depth_ != 1) return true;
  key_.assign(key);
  if (!seen_.insert(key_).second) return Fail("", "field \"" + Printable(key) + "\" appears more than once");
  return true;
}

bool EventChecker::Open(JsonKind kind) {
  if (depth_ == 0 && (done_ || kind != JsonKind::kObject)) {
    return Fail("", done_ ? "must be one JSON object" : "must be a JSON object");
  }
  if (++depth_ > kMaxEventDepth) {
    return Fail("", "nests objects and arrays deeper than " + std::to_string(kMaxEventDepth) + " levels");
  }
  return depth_ != 2 || CheckField(kind, "");
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

bool EventChecker::CheckField(JsonKind kind, std::string_view text) {
  std::string rule = FieldProblem(key_, kind, text, stage_);
  if (rule.empty()) return true;
  return Fail(key_, std::move(rule), KindName(kind, text));
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
