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

namespace ix {

// The protocol's limits.
inline constexpr size_t kMaxEventsPerBatch = 1000;
inline constexpr size_t kMaxEventsBodyBytes = size_t{4} << 20;
inline constexpr size_t kMaxEventBytes = size_t{64} << 10;  // one event, as stored (compact JSON)
inline constexpr size_t kMaxResultBytes = size_t{64} << 20;
inline constexpr size_t kMaxEventIdBytes = 200;
inline constexpr size_t kMaxEventNameBytes = 32;
inline constexpr size_t kMaxStepBytes = 64;
inline constexpr size_t kMaxNodeBytes = 255;
inline constexpr size_t kMaxSweepIdBytes = 64;
inline constexpr size_t kMaxResultNameBytes = 255;
// Objects and arrays inside one event nest at most this deep (the event
// object itself is level 1), so storing and printing it never recurses far.
inline constexpr int kMaxEventDepth = 32;

// One event that passed every check. Invariant: the fields hold what the
// protocol allows, and `body` is the whole event as compact JSON (valid
// UTF-8, at most kMaxEventBytes), the fields above included.
struct ValidEvent {
  std::string id;     // "STEP:SEQ"
  std::string event;  // [a-z_]{1,32}
  std::string step;   // 1..64 bytes
  double time = 0;    // unix seconds
  std::optional<std::string> sweep;
  std::optional<int64_t> entry;  // >= 0
  std::optional<std::string> node;
  std::string body;
};

// A request body of POST /v1/events: a JSON array of at most
// kMaxEventsPerBatch events, each checked as the protocol says. Any invalid
// event fails the whole batch; errors name it ("events[3].sweep: ...").
// Duplicate ids inside the batch are kept (the store counts them).
Result<std::vector<ValidEvent>> ParseEventBatch(std::string_view body);

// SWEEP: [A-Za-z0-9._-]{1,64}, not "." or "..". The error says what is
// allowed, prefixed by nothing (callers name the field).
Status CheckSweepId(std::string_view s);
// NAME of a result file: [A-Za-z0-9._-]{1,255}, not "." or "..".
Status CheckResultName(std::string_view s);
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
