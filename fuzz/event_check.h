// What the two event targets check of an event one end let through: as a
// stamped event it keeps the protocol's rules (core/events/event_rules.h)
// and size, read again with the flags both ends read with.
#pragma once

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <string>

#include "core/events/event_rules.h"
#include "fuzz/fuzz_util.h"

namespace ixfuzz {

// Traps unless `event` keeps the rules for a stamped event; `what` names
// where it came from.
inline void CheckStampedEvent(const std::string& event, const std::string& what) {
  ix::EventChecker checker(ix::EventStage::kStamped);
  rapidjson::BaseReaderHandler<> sink;
  ix::CheckedEventHandler<rapidjson::BaseReaderHandler<>> handler(checker, sink);
  rapidjson::MemoryStream stream(event.data(), event.size());
  rapidjson::Reader reader;
  Check(reader.Parse<ix::kEventParseFlags>(stream, handler) && checker.done(),
        what + " breaks the rules (" + checker.problem().field + ": " + checker.problem().rule + "): " + event);
  Check(ix::CheckEventSize(event.size()).ok(), what + " is over the limit: " + std::to_string(event.size()));
}

}  // namespace ixfuzz
