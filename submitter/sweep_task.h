// `ixsubmit task`: what one array task (or the canary job) of a sweep runs
// inside its allocation. It finds its entry in sweep.json by
// SLURM_ARRAY_TASK_ID, runs `srun --inferencex-recipe/arm/conc ... CLIENT`
// (in the row's container image unless the sweep runs on the host:
// StepSrunArgv) with IX_RESULT_DIR at the entry's result directory, and writes
// status.json there (running, then succeeded or failed with the step's
// failure.json reason). Under fail-fast a failed task cancels the rest of
// its own array (pending and running, never itself) before it exits, so the
// bucket stops even when the submitter is gone. Exits with srun's status.
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
// The status.json in `dir`, when its task wrote one that parses.
std::optional<TaskStatus> ReadTaskStatus(const std::string& dir);

int RunTaskCommand(const std::vector<std::string>& args);

}  // namespace ix
