// The records ix-stepd writes for people and tools beside the step:
// failure.json (what failed, where and why) and placement-obtained.json
// (what binding each started process really got). JSON text, and for a step
// across nodes the reading of the other nodes' failure.json.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/node/binding.h"

namespace ix {

// One failure.json: which process, pid, exit status or signal, why, the
// last lines of its log, and when it was seen (unix ms); in a step across
// nodes (node_rank >= 0) also the node it happened on and its rank there.
struct FailureRecord {
  std::string process;
  pid_t pid = 0;
  std::string reason;
  std::string log_tail;
  std::string node;
  int64_t node_rank = -1;
  int64_t unix_ms = 0;
  // A hang (the policy's, docs/STEP.md): cause "hang", what hung as a JSON
  // object (HangFinding::Json), and the diagnosis files written before the
  // kill. Empty for a crash.
  std::string cause{};
  std::string hang_json{};
  std::vector<std::string> diagnosis{};
};

std::string FailureJson(const FailureRecord& f);

// A failure.json's record; an error names what is missing or malformed.
Result<FailureRecord> ParseFailureJson(const std::string& text);

// The head's failure.json when another node's part failed first: that
// node's record, with what the head saw of it under "seen_on_head".
std::string FailureJsonAfter(const FailureRecord& first, const FailureRecord& head);

// The earliest failure.json in node1/ .. node<nodes-1>/ under the result
// directory seen in [since_ms, by_ms] (this step, up to about the head's
// own failure: a record of an earlier step in the same directory is
// older), read without following links and at most 1 MiB each; none if no
// node's part failed first.
std::optional<FailureRecord> EarliestNodeFailure(int result_dir_fd, int64_t nodes, int64_t since_ms, int64_t by_ms);

// EarliestNodeFailure, looked for again every 10 ms while there is none,
// for up to `wait`.
std::optional<FailureRecord> AwaitNodeFailure(int result_dir_fd, int64_t nodes, int64_t since_ms, int64_t by_ms,
                                              std::chrono::milliseconds wait);

// Now in unix milliseconds: the clock of FailureRecord::unix_ms.
int64_t UnixMsNow();

// {"engine":{"cpus":"0-15","mempolicy":"bind:0",...},...}: what each
// started process actually got (or why it could not be read).
std::string ObtainedJson(const std::vector<std::pair<std::string, Result<ProcBinding>>>& got);

}  // namespace ix
