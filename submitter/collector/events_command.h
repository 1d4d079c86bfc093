// `ixsubmit events [SWEEP_ID] [--db PATH] [--json] [--results]`: what the
// collector stored. Events, all or one sweep's, ordered by (time, id): a
// table (time, node, step, event, id) or, with --json, a JSON array of the
// stored events as they were received. With --results: the result files
// (sweep, entry, name, size, sha256) instead.
#pragma once

#include <string>
#include <vector>

#include "submitter/collector/collector_store.h"

namespace ix {

// "[\n" + the bodies, one a line, comma-separated + "\n]\n" ("[]\n" for none).
std::string EventsJson(const std::vector<StoredEvent>& events);
// A header line and one line per event; control bytes shown as \xNN.
std::string EventsTable(const std::vector<StoredEvent>& events);
std::string ResultsJson(const std::vector<StoredResultInfo>& results);
std::string ResultsTable(const std::vector<StoredResultInfo>& results);

// Unix seconds as "2026-12-02T16:09:00.123Z".
std::string UtcTimeText(double unix_seconds);

int RunEventsCommand(const std::vector<std::string>& args);

}  // namespace ix
