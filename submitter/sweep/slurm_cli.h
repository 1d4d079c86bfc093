// SlurmCli: the Slurm command-line tools the submitter uses (sbatch,
// scancel, squeue, scontrol, sacct) behind a small interface, so the sweep
// logic runs against a fake in tests and against the real programs here.
//
// RealSlurmCli runs each program by argv, never through a shell, with the
// environment it was given (sbatch hands it to the job) and a time limit
// (RunCommand, command_runner.h); what the programs print is read by the
// pure parsers of slurm_output.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/command_runner.h"  // RunCommand, CommandOutput
#include "submitter/sweep/slurm_output.h"    // SlurmState, TaskId, QueueTask, JobInfo and their parsers

namespace ix {

// Slurm's MaxArraySize (`scontrol show config`; array indices stay below
// it), or 1001, Slurm's default, when it cannot be read (a dry run without
// a cluster).
int64_t MaxArraySize(const std::vector<std::string>& env);

// ---- the interface -------------------------------------------------------------------

// The Slurm tools the sweep needs, as calls; RealSlurmCli runs them, a
// fake stands in for them in tests.
class SlurmCli {
 public:
  virtual ~SlurmCli() = default;
  // sbatch --parsable ARGS... SCRIPT; the job id. A rejection carries
  // sbatch's stderr verbatim. An error for which SubmitOutcomeUnknown holds
  // (sbatch timed out, was killed, or exited 0 without an id) may have
  // created the job: the caller must look it up by name before submitting
  // it again.
  virtual Result<int64_t> Submit(const std::vector<std::string>& sbatch_args, const std::string& script_path) = 0;
  // scancel IDS ("123" or "123_4"), only those in `only_in_state` when set
  // (PENDING, RUNNING or SUSPENDED: what scancel --state accepts). Jobs that
  // already ended are not an error.
  virtual Status Cancel(const std::vector<std::string>& ids, std::optional<SlurmState> only_in_state = {}) = 0;
  // Every task of these jobs that slurmctld still knows, in every state.
  // Jobs it has forgotten (MinJobAge) are missing from the result.
  virtual Result<std::vector<QueueTask>> Queue(const std::vector<int64_t>& job_ids) = 0;
  // scontrol -o show job ID: one JobInfo per task of an array job.
  virtual Result<std::vector<JobInfo>> ShowJob(int64_t job_id) = 0;
  // The job ids of this user's jobs named `name` (array job ids, sorted,
  // unique): how a resumed submitter finds a job that sbatch may have
  // created before the submitter died.
  virtual Result<std::vector<int64_t>> FindJobsByName(const std::string& name) = 0;
};

// What ends the message of a Submit error whose job may exist all the same.
inline constexpr const char* kSubmitOutcomeUnknown = "(the job may or may not exist)";
// Whether a Submit error leaves it open that sbatch created the job: only a
// clean rejection (sbatch exited non-zero) proves it did not.
bool SubmitOutcomeUnknown(const Error& e);

// Where the programs are; plain names are looked up in the environment's PATH.
struct SlurmPrograms {
  std::string sbatch = "sbatch";
  std::string scancel = "scancel";
  std::string squeue = "squeue";
  std::string scontrol = "scontrol";
  std::string sacct = "sacct";
};

// SlurmCli by running the programs of SlurmPrograms, each with `env` as its
// whole environment and `timeout` as its limit.
class RealSlurmCli : public SlurmCli {
 public:
  // `env`: the environment of every program (and so of submitted jobs).
  explicit RealSlurmCli(std::vector<std::string> env, SlurmPrograms programs = {},
                        std::chrono::milliseconds timeout = std::chrono::seconds(60));

  Result<int64_t> Submit(const std::vector<std::string>& sbatch_args, const std::string& script_path) override;
  Status Cancel(const std::vector<std::string>& ids, std::optional<SlurmState> only_in_state = {}) override;
  Result<std::vector<QueueTask>> Queue(const std::vector<int64_t>& job_ids) override;
  Result<std::vector<JobInfo>> ShowJob(int64_t job_id) override;
  // squeue --me --name, then sacct for jobs slurmctld has already forgotten
  // (skipped where accounting is not configured).
  Result<std::vector<int64_t>> FindJobsByName(const std::string& name) override;

  // The argv each call runs, for tests and --dry-run output.
  std::vector<std::string> SubmitArgv(const std::vector<std::string>& sbatch_args, const std::string& script_path) const;
  std::vector<std::string> CancelArgv(const std::vector<std::string>& ids, std::optional<SlurmState> only_in_state) const;
  std::vector<std::string> QueueArgv(const std::vector<int64_t>& job_ids) const;

 private:
  Result<CommandOutput> Run(const std::vector<std::string>& argv) const;
  // Run, and an error naming `what` unless the program ran and succeeded.
  Result<CommandOutput> RunOk(const std::string& what, const std::vector<std::string>& argv) const;

  std::vector<std::string> env_;
  SlurmPrograms programs_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ix
