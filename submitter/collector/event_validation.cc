#include "submitter/collector/event_validation.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <limits>

#include "core/base/text.h"

namespace ix {
namespace {

std::string_view StringOf(const rapidjson::Value& v) { return {v.GetString(), v.GetStringLength()}; }

// "id: must be ..." or the whole event's problem; what came is not
// repeated to the sender.
std::string ProblemMessage(const EventProblem& p) { return p.field.empty() ? p.rule : p.field + ": " + p.rule; }

// The protocol's fields of an event that kept the rules, into `out`.
void TakeFields(const rapidjson::Value& v, ValidEvent& out) {
  out.id = StringOf(v["id"]);
  out.event = StringOf(v["event"]);
  out.step = StringOf(v["step"]);
  out.time = v["time"].GetDouble();
  if (const auto s = v.FindMember("sweep"); s != v.MemberEnd()) out.sweep = std::string(StringOf(s->value));
  if (const auto e = v.FindMember("entry"); e != v.MemberEnd()) out.entry = e->value.GetInt64();
  if (const auto n = v.FindMember("node"); n != v.MemberEnd()) out.node = std::string(StringOf(n->value));
}

// Checks `v` by the protocol's rules while writing it as compact JSON, in
// one pass (Accept stops descending at the depth limit).
Result<ValidEvent> ValidateEvent(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  EventChecker checker(EventStage::kStamped);
  CheckedEventHandler<rapidjson::Writer<rapidjson::StringBuffer>> handler(checker, w);
  if (!v.Accept(handler) || !checker.done()) {
    return Error{checker.problem().rule.empty() ? "cannot be written as JSON" : ProblemMessage(checker.problem())};
  }
  if (Status ok = CheckEventSize(buf.GetSize()); !ok) return ok.error();
  ValidEvent out;
  TakeFields(v, out);
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
  doc.Parse<kEventParseFlags>(body.data(), body.size());
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
