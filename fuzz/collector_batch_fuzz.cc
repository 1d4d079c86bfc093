// libFuzzer target for what the collector reads from a node agent before it
// stores anything (submitter/collector/event_validation.h): arbitrary bytes
// as the body of POST /v1/events (ParseEventBatch) and as the path after
// /v1/results/ (ParseResultTarget). Errors are expected; crashes, leaks,
// UB and hangs are bugs, and so is: a batch over kMaxEventsPerBatch; an
// event that passed but whose stored body breaks the protocol's rules
// (core/events/event_rules.h, a stamped event), is over kMaxEventBytes, or
// says other fields than the ones stored beside it; a body that is not
// stored the same when it comes again; a result target whose sweep or name
// is not a protocol name, holds a '/' or NUL or is "." or "..", or whose
// entry is negative, or that does not come back from its own path.
#include <rapidjson/document.h>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/event_check.h"
#include "fuzz/fuzz_util.h"
#include "submitter/collector/event_validation.h"

namespace {

std::string StringOf(const rapidjson::Value& v) { return {v.GetString(), v.GetStringLength()}; }

// The fields stored beside the body are the body's.
void CheckFields(const ix::ValidEvent& e) {
  rapidjson::Document d;
  d.Parse<ix::kEventParseFlags>(e.body.data(), e.body.size());
  ixfuzz::Check(!d.HasParseError() && d.IsObject(), "a stored body that is not an object: " + e.body);
  ixfuzz::Check(StringOf(d["id"]) == e.id && StringOf(d["event"]) == e.event && StringOf(d["step"]) == e.step,
                "id, event or step stored apart from the body: " + e.body);
  ixfuzz::Check(e.sweep.has_value() == d.HasMember("sweep") && (!e.sweep || ix::IsValidSweepId(*e.sweep)) &&
                    (!e.sweep || StringOf(d["sweep"]) == *e.sweep),
                "the sweep stored apart from the body: " + e.body);
  // Numbers are their text in `d` (kEventParseFlags).
  const std::string time = StringOf(d["time"]);
  double t = 0;
  std::from_chars(time.data(), time.data() + time.size(), t);
  ixfuzz::Check(t == e.time && std::isfinite(e.time), "the time stored apart from the body: " + e.body);
  ixfuzz::Check(e.entry.has_value() == d.HasMember("entry") && (!e.entry || *e.entry >= 0) &&
                    (!e.entry || std::stoll(StringOf(d["entry"])) == *e.entry),
                "the entry stored apart from the body: " + e.body);
  ixfuzz::Check(e.node.has_value() == d.HasMember("node") &&
                    (!e.node || (!e.node->empty() && e.node->size() <= ix::kMaxNodeBytes)),
                "the node stored apart from the body: " + e.body);
}

void CheckBatch(std::string_view body) {
  ix::Result<std::vector<ix::ValidEvent>> batch = ix::ParseEventBatch(body);
  if (!batch) return;
  ixfuzz::Check(batch.value().size() <= ix::kMaxEventsPerBatch, "a batch over the limit");
  for (const ix::ValidEvent& e : batch.value()) {
    ixfuzz::CheckStampedEvent(e.body, "a stored event");
    CheckFields(e);
    ix::Result<std::vector<ix::ValidEvent>> again = ix::ParseEventBatch("[" + e.body + "]");
    ixfuzz::Check(again.ok(), "a stored event refused when it comes again: " + e.body);
    ixfuzz::Check(again.value()[0].body == e.body, "a stored event changes when it comes again: " + e.body);
  }
}

bool SafeComponent(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

// NAME or DIR/NAME, each part a safe component.
bool SafeResultPath(const std::string& s) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos) return SafeComponent(s);
  return SafeComponent(s.substr(0, slash)) && SafeComponent(s.substr(slash + 1));
}

void CheckResultTarget(std::string_view rest) {
  ix::Result<ix::ResultTarget> t = ix::ParseResultTarget(rest);
  if (!t) return;
  const ix::ResultTarget& r = t.value();
  ixfuzz::Check(SafeComponent(r.sweep) && ix::IsValidSweepId(r.sweep), "an unsafe sweep in a result path");
  ixfuzz::Check(SafeResultPath(r.name) && ix::IsValidResultName(r.name), "an unsafe name in a result path");
  ixfuzz::Check(r.entry >= 0, "a negative entry in a result path");
  ix::Result<ix::ResultTarget> back = ix::ParseResultTarget(r.sweep + "/" + std::to_string(r.entry) + "/" + r.name);
  ixfuzz::Check(back.ok() && back.value().sweep == r.sweep && back.value().entry == r.entry &&
                    back.value().name == r.name,
                "a result target that does not come back from its own path");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ixfuzz::CheckText(data, size, CheckBatch, CheckResultTarget);
}
