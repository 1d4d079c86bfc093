// What Slurm's command-line tools print, parsed: job states (squeue,
// scontrol, sacct spellings), job and array task ids, array index
// expressions, and the output of sbatch --parsable, squeue, scontrol show
// job and scontrol show config. Pure functions over text, each tested on
// real output shapes; running the tools is slurm_cli.h's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

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

// ---- lines and ids of any tool -------------------------------------------------------

// The lines of a tool's output, without their '\n' or a '\r' before it.
std::vector<std::string_view> OutputLines(std::string_view text);

// The job id a line of squeue %F or sacct JobID starts with: "1234",
// "1234_7", "1234_[1-3]", "1234.batch", "1234+0" -> 1234; nullopt when the
// line does not start with a positive job id.
std::optional<int64_t> LeadingJobId(std::string_view line);

// MaxArraySize from `scontrol show config`, or nullopt when it is not
// there or not a positive number.
std::optional<int64_t> ParseMaxArraySize(std::string_view config);

}  // namespace ix
