// `ixsubmit task`: what one array task (or the canary job) of a sweep runs
// inside its allocation. It finds its entry in sweep.json by
// SLURM_ARRAY_TASK_ID, runs `srun --inferencex-recipe/arm/conc ... CLIENT`
// (in the row's container image unless the sweep runs on the host:
// StepSrunArgv) with IX_RESULT_DIR at the entry's result directory, and writes
// status.json there (running, then succeeded or failed with the step's
// failure.json reason). Under fail-fast a failed task cancels the rest of
// its own array (pending and running, never itself) before it exits, so the
// bucket stops even when the submitter is gone. Exits with srun's status.
// On a node after the head of a step across nodes (StepNodeRank() > 0) it
// runs nothing, writes nothing and exits 0: the head's task is the entry's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ix {

// What a task wrote in its entry's status.json.
struct TaskStatus {
  std::string state;  // "running", "succeeded", "failed"
  double started = 0, ended = 0;
  int64_t exit_code = 0;
  std::string reason, process;
};
// The status.json in `dir`, when a task of sweep `sweep_id` wrote one that
// parses (one of another sweep that used the directory is not).
std::optional<TaskStatus> ReadTaskStatus(const std::string& dir, const std::string& sweep_id);

// This node's rank in a step across nodes: IX_NODE_RANK (the plugin's),
// else SLURM_NODEID, when a positive integer; 0 (the head, or not such a
// step) otherwise.
int64_t StepNodeRank();

int RunTaskCommand(const std::vector<std::string>& args);

}  // namespace ix
