#include "submitter/collector/event_validation.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <limits>
#include <set>

#include "core/base/text.h"

namespace ix {
namespace {

constexpr const char* kNameAlphabet = "characters from A-Z a-z 0-9 . _ -";

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

// [A-Za-z0-9._-]{1,max}, not "." or "..".
Status CheckName(std::string_view s, size_t max) {
  const std::string rule = "must be 1 to " + std::to_string(max) + " " + kNameAlphabet + ", not \".\" or \"..\"";
  if (s.empty() || s.size() > max || s == "." || s == "..") return Error{rule};
  for (char c : s) {
    if (!IsNameChar(c)) return Error{rule + (c == '%' ? " (percent-encoding is not decoded)" : "")};
  }
  return Ok{};
}

std::string_view StringOf(const rapidjson::Value& v) { return {v.GetString(), v.GetStringLength()}; }

// `[^:]+:[0-9]+`, 1..200 bytes.
bool IsEventId(std::string_view s) {
  if (s.empty() || s.size() > kMaxEventIdBytes) return false;
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return false;
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

// True when `v` nests no deeper than `limit` levels (an object or array is
// one level); stops descending at the limit, so the recursion is bounded.
bool NestsWithin(const rapidjson::Value& v, int limit) {
  if (!v.IsObject() && !v.IsArray()) return true;
  if (limit == 0) return false;
  if (v.IsObject()) {
    for (const auto& m : v.GetObject()) {
      if (!NestsWithin(m.value, limit - 1)) return false;
    }
  } else {
    for (const auto& e : v.GetArray()) {
      if (!NestsWithin(e, limit - 1)) return false;
    }
  }
  return true;
}

// The top-level member names, each once.
Status CheckUniqueKeys(const rapidjson::Value& v) {
  std::set<std::string_view> seen;
  for (const auto& m : v.GetObject()) {
    if (!seen.insert(StringOf(m.name)).second) {
      return Error{"field \"" + std::string(StringOf(m.name)) + "\" appears more than once"};
    }
  }
  return Ok{};
}

// A required string field of 1..max bytes.
Result<std::string> RequiredString(const rapidjson::Value& v, const char* field, size_t max, const char* what) {
  const auto it = v.FindMember(field);
  if (it == v.MemberEnd()) return Error{std::string(field) + ": missing; must be " + what};
  if (!it->value.IsString() || it->value.GetStringLength() == 0 || it->value.GetStringLength() > max) {
    return Error{std::string(field) + ": must be " + what};
  }
  return std::string(StringOf(it->value));
}

// The protocol's fields of one event, into `out`.
Status CheckFields(const rapidjson::Value& v, ValidEvent& out) {
  Result<std::string> id = RequiredString(v, "id", kMaxEventIdBytes, "a string of 1 to 200 bytes, STEP:SEQ");
  if (!id) return id.error();
  if (!IsEventId(id.value())) return Error{"id: must be STEP:SEQ (no ':' in STEP, SEQ decimal digits), 1 to 200 bytes"};
  Result<std::string> event = RequiredString(v, "event", kMaxEventNameBytes, "1 to 32 characters from a-z and _");
  if (!event) return event.error();
  if (!IsEventName(event.value())) return Error{"event: must be 1 to 32 characters from a-z and _"};
  Result<std::string> step = RequiredString(v, "step", kMaxStepBytes, "a string of 1 to 64 bytes");
  if (!step) return step.error();
  const auto time = v.FindMember("time");
  if (time == v.MemberEnd() || !time->value.IsNumber()) return Error{"time: must be a number (unix seconds)"};
  out.id = std::move(id).value();
  out.event = std::move(event).value();
  out.step = std::move(step).value();
  out.time = time->value.GetDouble();
  if (const auto s = v.FindMember("sweep"); s != v.MemberEnd()) {
    if (!s->value.IsString()) return Error{"sweep: must be a string (or absent)"};
    if (Status ok = CheckSweepId(StringOf(s->value)); !ok) return Error{"sweep: " + ok.error().message};
    out.sweep = std::string(StringOf(s->value));
  }
  if (const auto e = v.FindMember("entry"); e != v.MemberEnd()) {
    if (!e->value.IsInt64() || e->value.GetInt64() < 0) {
      return Error{"entry: must be a non-negative integer (or absent)"};
    }
    out.entry = e->value.GetInt64();
  }
  if (const auto n = v.FindMember("node"); n != v.MemberEnd()) {
    if (!n->value.IsString() || n->value.GetStringLength() == 0 || n->value.GetStringLength() > kMaxNodeBytes) {
      return Error{"node: must be a string of 1 to 255 bytes (or absent)"};
    }
    out.node = std::string(StringOf(n->value));
  }
  return Ok{};
}

Result<ValidEvent> ValidateEvent(const rapidjson::Value& v) {
  if (!v.IsObject()) return Error{"must be a JSON object"};
  if (!NestsWithin(v, kMaxEventDepth)) {
    return Error{"nests objects and arrays deeper than " + std::to_string(kMaxEventDepth) + " levels"};
  }
  if (Status ok = CheckUniqueKeys(v); !ok) return ok.error();
  ValidEvent out;
  if (Status ok = CheckFields(v, out); !ok) return ok.error();
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  if (buf.GetSize() > kMaxEventBytes) {
    return Error{"is " + std::to_string(buf.GetSize()) + " bytes as compact JSON; at most " +
                 std::to_string(kMaxEventBytes) + " are allowed"};
  }
  out.body.assign(buf.GetString(), buf.GetSize());
  return out;
}

}  // namespace

Result<std::vector<ValidEvent>> ParseEventBatch(std::string_view body) {
  if (body.size() > kMaxEventsBodyBytes) {
    return Error{"body: " + std::to_string(body.size()) + " bytes; at most " + std::to_string(kMaxEventsBodyBytes) +
                 " are allowed"};
  }
  rapidjson::Document doc;
  // Iterative: a deeply nested body cannot exhaust the stack. Encoding
  // checked: what is stored is printed again as JSON.
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(body.data(), body.size());
  if (doc.HasParseError()) {
    return Error{std::string("body: not valid JSON (") + rapidjson::GetParseError_En(doc.GetParseError()) +
                 " at byte " + std::to_string(doc.GetErrorOffset()) + ")"};
  }
  if (!doc.IsArray()) return Error{"body: must be a JSON array of events"};
  if (doc.Size() > kMaxEventsPerBatch) {
    return Error{"body: " + std::to_string(doc.Size()) + " events; at most " + std::to_string(kMaxEventsPerBatch) +
                 " are allowed per request"};
  }
  std::vector<ValidEvent> events;
  events.reserve(doc.Size());
  for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
    Result<ValidEvent> e = ValidateEvent(doc[i]);
    if (!e) return Error{"events[" + std::to_string(i) + "]: " + e.error().message};
    events.push_back(std::move(e).value());
  }
  return events;
}

Status CheckSweepId(std::string_view s) { return CheckName(s, kMaxSweepIdBytes); }

Status CheckResultName(std::string_view s) { return CheckName(s, kMaxResultNameBytes); }

Result<int64_t> ParseEntryIndex(std::string_view s) {
  uint64_t v = 0;
  if (!ParseUnsigned(s, v) || v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Error{"must be a non-negative decimal integer (digits only, at most 9223372036854775807)"};
  }
  return static_cast<int64_t>(v);
}

Result<ResultTarget> ParseResultTarget(std::string_view rest) {
  const std::vector<std::string_view> parts = Split(rest, '/');
  if (parts.size() != 3) {
    return Error{"path: must be /v1/results/SWEEP/ENTRY/NAME (three parts; NAME may not contain '/')"};
  }
  if (Status ok = CheckSweepId(parts[0]); !ok) return Error{"SWEEP in the path: " + ok.error().message};
  Result<int64_t> entry = ParseEntryIndex(parts[1]);
  if (!entry) return Error{"ENTRY in the path: " + entry.error().message};
  if (Status ok = CheckResultName(parts[2]); !ok) return Error{"NAME in the path: " + ok.error().message};
  return ResultTarget{std::string(parts[0]), entry.value(), std::string(parts[2])};
}

}  // namespace ix
