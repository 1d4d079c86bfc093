// TaskReporter: what `ixsubmit task` tells the node agent about its entry,
// so that the entry's state and results reach the sweep's collector without
// a shared file system. Events go on the agent's datagram socket
// (core/process/event_sink.h) with step "JOB.batch" and the entry's sweep
// and index:
//   - `route`: the sweep's collector URL, with the token file as a
//     descriptor (the agent reads the token from it, never from a path or a
//     command line), so the agent delivers this sweep's events there;
//   - `entry`: the entry's state (running, then succeeded or failed, with
//     srun's exit status and the failure's reason and process);
//   - `result`: one per regular file of the result directory, each with the
//     file as a read-only descriptor and its name.
// Without an agent (no socket) nothing is sent and nothing fails: the
// results stay where the step wrote them.
//
// Invariant: only regular files directly in the result directory are sent,
// opened without following links.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/process/event_sink.h"
#include "submitter/sweep/sweep_files.h"

namespace ix {

class TaskReporter {
 public:
  // `step`: "JOB.batch" for the batch script's task.
  TaskReporter(const SweepManifest& m, int64_t entry, std::string step);

  bool enabled() const { return sink_.enabled(); }
  // The route event, when the sweep has a collector; false when it was not
  // sent (said on stderr).
  bool Route();
  void State(const std::string& state, int exit_code = 0, const std::string& reason = "",
             const std::string& process = "");
  // Sends every file ResultFileNames lists in `dir`; returns how many.
  size_t Results(const std::string& dir);
  uint64_t dropped() const { return sink_.dropped(); }

 private:
  // Retries a datagram the agent's full queue refused, for up to 2 s: the
  // task is not slurmstepd and can afford to wait for a result to go.
  bool SendPatiently(const std::string& event, const std::vector<std::pair<std::string, std::string>>& fields,
                     const std::vector<std::pair<std::string, std::string>>& raw, int fd);

  const SweepManifest& m_;
  std::string step_;
  EventSink sink_;
};

// What Results sends of the directory `dir_fd`, sorted: its regular files,
// and those of its subdirectories one level down as DIR/NAME (AIPerf's
// aiperf_artifacts/), less what InferenceX leaves out of its uploads
// (AIPerf's inputs.json and profile_export_raw.jsonl, large and not read
// by its aggregation). Links are never followed; names starting with '.'
// are skipped.
std::vector<std::string> ResultFileNames(int dir_fd);

}  // namespace ix
