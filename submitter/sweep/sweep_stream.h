// StreamTracker: the driver's side of the sweep's stream (the node agents
// through the sweep's collector, sweep_inbox.h). Once a look it takes what
// arrived: result files are written into the sweep directory's
// results/INDEX/, and the entries' words become store updates (the task's
// `entry` state, ix-stepd's `failure`), which come sooner than squeue and
// sacct. Slurm stays the fallback and the authority for jobs that never
// report.
//
// With node results (--node-results: the steps write on the node, and the
// results reach results/INDEX/ only through the stream) an entry that
// Slurm says ended is final only once its final word (the `entry` event,
// or its status.json) has come, or after kResultsGraceSeconds (then it
// fails with kResultsNotDelivered); and the watch goes on while a final
// entry's announced results are still on their way, for as long.
//
// Invariants: only entries of the plan are acted on (an index outside it is
// dropped); result files are written only under results/INDEX/ through
// directory descriptors, never following a link, atomically.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/sweep_files.h"
#include "submitter/sweep/sweep_inbox.h"
#include "submitter/sweep/sweep_records.h"

namespace ix {

inline constexpr double kResultsGraceSeconds = 60;
inline constexpr const char* kResultsNotDelivered = "results not delivered by the node agent within 60 s";

// Whether `name` may be a result file's name here: the protocol's NAME or
// DIR/NAME ([A-Za-z0-9._-] parts, 255 bytes in all), no "..", and no part
// starting with '.' (the writer's temporary files do).
bool IsResultFileName(const std::string& name);

// Writes `content` as SWEEP_DIR/results/INDEX/NAME (making results/INDEX
// when missing): a temporary file created O_EXCL | O_NOFOLLOW, fsync'd and
// renamed over NAME, through descriptors that never follow a link. A file
// with the same content already there is left alone; returns whether it
// wrote. Errors name the file.
Result<bool> WriteResultFile(const std::string& sweep_dir, int64_t entry, const std::string& name,
                             const std::string& content);

class StreamTracker {
 public:
  // `inbox` null: no stream; nothing is heard and nothing awaited.
  StreamTracker(const SweepManifest& m, SweepInbox* inbox);

  bool enabled() const { return inbox_ != nullptr; }
  // Whether results reach the sweep directory only through the stream.
  bool node_results() const { return enabled() && !m_.stream.node_result_dir.empty(); }

  // Takes what arrived: writes the result files, remembers what each entry
  // said, and returns the store updates that makes, in arrival order
  // (apply them with FinalEntries::kKeep). What could not be done (a file
  // that cannot be written) is added to `problems`, one line each.
  std::vector<EntryUpdate> Take(std::vector<std::string>& problems);

  // The task said its entry runs (and has not said more).
  bool HeardRunning(int64_t entry) const;
  // The task's final state, or its status.json, has come.
  bool FinalWord(int64_t entry) const;

  // Slurm says (or its silence says) that entry `e` ended, which makes it
  // `u`. With node results and an entry that ran without a final word:
  // nullopt until kResultsGraceSeconds after the first such look, then `u`
  // failed (cancelled stays cancelled) with kResultsNotDelivered.
  // Otherwise `u` as it is.
  std::optional<EntryUpdate> SettleEnded(const EntryRecord& e, EntryUpdate u, double now);

  // Whether the watch must go on for entry `e`, final in the store (node
  // results only): a result it announced has not arrived, or it ended
  // succeeded or failed after running without a final word; for at most
  // kResultsGraceSeconds after it was first seen final.
  bool AwaitingResults(const EntryRecord& e, double now);

 private:
  // What the stream said of one entry.
  struct Heard {
    bool running = false, final_word = false, gave_up = false;
    std::set<std::string> announced, arrived;  // result names
    std::optional<double> ended_seen, final_seen;
  };

  std::optional<EntryUpdate> TakeItem(StreamItem& item, std::vector<std::string>& problems);
  void TakeResultFile(StreamItem& item, std::vector<std::string>& problems);

  const SweepManifest& m_;
  SweepInbox* inbox_;
  std::map<int64_t, Heard> heard_;
};

}  // namespace ix
