// SlurmCli: the Slurm command-line tools the submitter uses (sbatch,
// scancel, squeue, scontrol, sacct) behind a small interface, so the sweep
// logic runs against a fake in tests and against the real programs here.
//
// RealSlurmCli runs each program by argv, never through a shell, with the
// environment it was given (sbatch hands it to the job) and a time limit;
// what the programs print is read by the pure parsers below, each tested on
// real output shapes. RunCommand is the runner: it reads stdout and stderr
// together (poll), so a program filling one pipe never deadlocks on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

// ---- running a program ---------------------------------------------------------

// How a program ended and what it printed. Invariant: signal != 0 only
// when the program was killed by that signal (exit_code is then -1).
struct CommandOutput {
  int exit_code = 0;
  int signal = 0;
  std::string out;
  std::string err;
  bool ok() const { return signal == 0 && exit_code == 0; }
  // "exit status 1" or "killed by signal 9 (Killed)".
  std::string Describe() const;
};

// Runs argv (argv[0] looked up in env's PATH unless it holds a '/'; no
// shell) with `env` as its whole environment, stdin from /dev/null, in its
// own process group, and waits for it. A non-zero exit is not an error here:
// it is in the output. Errors: an empty argv, a program that cannot be
// started ("cannot execute 'x': No such file or directory (PATH=...)"), and
// one still running after `timeout` (its process group is killed; the
// message holds the end of its stderr). `echo`: also copy what it prints,
// as it arrives, to this process's stdout and stderr (a long program, such
// as an image import, shows its progress and is still captured).
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60), bool echo = false);

// Slurm's MaxArraySize (`scontrol show config`; array indices stay below
// it), or 1001, Slurm's default, when it cannot be read (a dry run without
// a cluster).
int64_t MaxArraySize(const std::vector<std::string>& env);

// ---- job states ------------------------------------------------------------------

// Slurm's job states (squeue(1) "JOB STATE CODES"), plus kUnknown for a
// name this build does not know, which is never final.
enum class SlurmState : uint8_t {
  kPending,
  kRunning,
  kSuspended,
  kCompleting,
  kCompleted,
  kConfiguring,
  kCancelled,
  kFailed,
  kTimeout,
  kNodeFail,
  kOutOfMemory,
  kPreempted,
  kBootFail,
  kDeadline,
  kRequeued,
  kRequeueHold,
  kRequeueFed,
  kResvDelHold,
  kResizing,
  kRevoked,
  kSignaling,
  kSpecialExit,
  kStageOut,
  kStopped,
  kUnknown,
};

// "PENDING", "CANCELLED by 1000" (scontrol/sacct), "CANCELLED+" (sacct's
// truncation) and the compact codes ("PD", "R", "CA", "OOM") all parse.
SlurmState ParseSlurmState(std::string_view text);
const char* SlurmStateName(SlurmState s);  // "PENDING", ...; "UNKNOWN"
// The job will not run (again) by itself: COMPLETED, CANCELLED, FAILED,
// TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, BOOT_FAIL, DEADLINE, REVOKED.
bool Final(SlurmState s);
// Final and successful: COMPLETED only.
bool Succeeded(SlurmState s);

// ---- ids -----------------------------------------------------------------------------

// A job ("1234") or one task of an array job ("1234_7"); job_id is the
// array's job id (%A_%a), not the task's own id.
struct TaskId {
  int64_t job_id = 0;
  std::optional<int64_t> task;
  std::string ToString() const;
  bool operator==(const TaskId&) const = default;
};
Result<TaskId> ParseTaskId(std::string_view text);

// Array index expressions as Slurm prints them: "7", "8-15", "8-15%2"
// (throttle ignored), "3,5,9-10", "1-7:2", with or without [brackets].
Result<std::vector<int64_t>> ExpandArrayIndices(std::string_view text);

// ---- parsers of the tools' output ---------------------------------------------------

// `sbatch --parsable` prints "ID" or "ID;CLUSTER".
Result<int64_t> ParseSbatchParsable(std::string_view out);

// One task as squeue reported it. A pending array range line is expanded
// to one QueueTask per index.
struct QueueTask {
  TaskId id;
  SlurmState state = SlurmState::kUnknown;
  std::string state_name;  // as printed
  std::string reason;      // %r: "None", "Dependency", "DependencyNeverSatisfied", ...
};
// The squeue format RealSlurmCli asks for: "%i|%T|%r". '|' appears in none
// of the three; the reason, last, may hold spaces.
inline constexpr const char* kSqueueFormat = "%i|%T|%r";
// Lines "1234|RUNNING|None", "1234_7|RUNNING|None", "1234_[8-15%2]|PENDING|JobArrayTaskLimit".
Result<std::vector<QueueTask>> ParseSqueue(std::string_view out);

// ExitCode=STATUS:SIGNAL.
struct SlurmExitCode {
  int status = 0;
  int signal = 0;
  bool operator==(const SlurmExitCode&) const = default;
};
Result<SlurmExitCode> ParseSlurmExitCode(std::string_view text);

// One job record of `scontrol -o show job`: every field by name, and the
// ones the sweep needs, typed.
struct JobInfo {
  std::map<std::string, std::string> fields;
  int64_t job_id = 0;                     // JobId: the task's own id for an array task
  std::optional<int64_t> array_job_id;    // ArrayJobId, array jobs only
  std::string array_task_id;              // ArrayTaskId as printed: "4", or "5-9%2" while pending
  std::string name;                       // JobName
  SlurmState state = SlurmState::kUnknown;
  std::string state_name;                 // JobState as printed
  std::string reason;                     // Reason
  std::string dependency;                 // Dependency: "afterok:123(unfulfilled)", "(null)"
  SlurmExitCode exit_code;
  // A field's value, or nullptr when absent.
  const std::string* Get(std::string_view key) const;
};

// The KEY=VALUE fields of one record. Values run to the next field; those
// of the free-text fields (Command, WorkDir, Reason, Comment, StdOut,
// StdErr, StdIn, JobName, AdminComment, SystemComment) may hold spaces and
// '=' and end only at a field name scontrol prints for jobs.
Result<std::map<std::string, std::string>> ParseScontrolFields(std::string_view record);
// `scontrol -o show job ID` (one record a line) or the multi-line form (a
// record per "JobId=" paragraph).
Result<std::vector<JobInfo>> ParseScontrolShowJob(std::string_view out);

// ---- the interface -------------------------------------------------------------------

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

  std::vector<std::string> env_;
  SlurmPrograms programs_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ix
