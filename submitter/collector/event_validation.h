// What the collector accepts from a node agent, checked before anything is
// stored (docs/COLLECTOR.md): a batch of events (a JSON array of objects,
// each with id, event, step, time and optional sweep, entry, node) and the
// names in a result file's path (SWEEP/ENTRY/NAME). Pure functions: text in,
// a validated value or an error naming the field and what is allowed out.
//
// Names are checked on the raw request target, never a decoded one: a `%`
// is not in the allowed alphabet, so `%2e%2e` or `%2F` is refused as it is
// instead of being decoded into `..` or `/`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
// The protocol's event rules and limits, shared with the node agent:
// kMaxEventBytes, kMaxEventsPerBatch, kMaxEventsBodyBytes, the field
// limits, kMaxEventDepth, CheckSweepId and CheckResultName (SWEEP and NAME
// of a result's path; errors say what is allowed, prefixed by nothing, as
// callers name the field).
#include "core/events/event_rules.h"

namespace ix {

// A result file's body (PUT /v1/results/...) is at most this long.
inline constexpr size_t kMaxResultBytes = size_t{64} << 20;

// One event that passed every check: its protocol fields (EventFields: id,
// event, step, time, optional sweep, entry, node) and the whole event.
// Invariant: the fields hold what the protocol allows, and `body` is the
// whole event as compact JSON (valid UTF-8, at most kMaxEventBytes, numbers
// as the agent wrote them), the fields included.
struct ValidEvent : EventFields {
  std::string body;
};

// A request body of POST /v1/events: a JSON array of at most
// kMaxEventsPerBatch events, each checked by the protocol's rules
// (EventChecker at EventStage::kStamped, CheckEventSize on its compact
// JSON). Any invalid event fails the whole batch; errors name it and the
// field ("events[3]: sweep: ..."). Duplicate ids inside the batch are kept
// (the store counts them).
Result<std::vector<ValidEvent>> ParseEventBatch(std::string_view body);

// ENTRY: a decimal integer (digits only) that fits int64.
Result<int64_t> ParseEntryIndex(std::string_view s);

// The parts of PUT /v1/results/SWEEP/ENTRY/NAME.
struct ResultTarget {
  std::string sweep;
  int64_t entry = 0;
  std::string name;
};
// `rest` is the raw path after "/v1/results/" (no query): exactly three
// segments, each checked as above. Errors name the segment.
Result<ResultTarget> ParseResultTarget(std::string_view rest);

}  // namespace ix
