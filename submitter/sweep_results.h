// SweepResults: one sweep's entries as stored (the sweep database) with
// what each left in its result directory: the result InferenceX's
// pipeline reads (a fixed-seq-len entry's agg_*.json; an agentic-coding
// entry's RESULT_FILENAME.json, the agentic aggregate itself) and the files
// worth linking. Read by `ixsubmit results` and `ixsubmit report`.
//
// Invariants: entries in sweep order; `agg` is an object when set; paths
// are absolute or as the database holds them.
#pragma once

#include <rapidjson/document.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/sweep_records.h"

namespace ix {

// One entry: its record, where its files are, and its agg result if any.
struct EntryResults {
  EntryRecord record;
  std::string result_dir;
  std::string agg_path;              // "" when the entry has no result (agg_*.json, or the agentic aggregate)
  bool agentic = false;              // benchmark.env's SCENARIO_TYPE is agentic-coding
  std::shared_ptr<rapidjson::Document> agg;  // null when none (or unreadable)
  std::vector<std::string> files;    // what is in result_dir, sorted (names only)
  std::string batch_log;             // the task's sbatch log (logs/NAME_A_a.out); "" when not found
};

struct SweepResults {
  SweepRecord sweep;
  std::vector<EntryResults> entries;
};

// The sweep `id` (the newest when nullopt) of database `db` (the default
// when nullopt); errors name the database or the sweep.
Result<SweepResults> LoadSweepResults(const std::optional<std::string>& db, const std::optional<std::string>& id);

// Where `target` is seen from the folder `from` (for links in a report).
std::string RelativeTo(const std::string& target, const std::string& from);

}  // namespace ix
