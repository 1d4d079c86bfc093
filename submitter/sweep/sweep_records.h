// The records of the sweep store (sweep_store.h): the states of sweeps,
// jobs and entries with their names as the database spells them, what a new
// sweep is made of (NewSweep, NewJob, NewEntry, with their checked
// invariants), what the store gives back (SweepRecord, JobRecord,
// EntryRecord) and the change to an entry (EntryUpdate). Plain values, no
// SQLite.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "submitter/sweep/sweep_mode.h"

namespace ix {

// ---- states -------------------------------------------------------------------

// Where a sweep as a whole stands; a job is the canary or one array.
enum class SweepState : uint8_t { kSubmitting, kRunning, kSucceeded, kFailed, kCancelled };
enum class JobKind : uint8_t { kCanary, kArray };
// planned: not yet given to sbatch; submitting: sbatch may have run (see
// sweep_store.h); submitted: has a Slurm job id; cancelled: scancel'ed by
// us; finished: every task of it is in a final state.
enum class JobState : uint8_t { kPlanned, kSubmitting, kSubmitted, kCancelled, kFinished };
// Where one matrix entry stands; succeeded and after are final (IsFinal).
enum class EntryState : uint8_t { kPending, kRunning, kSucceeded, kFailed, kCancelled, kSkipped };

const char* StateName(SweepState s);  // "submitting", ...
const char* StateName(JobState s);    // "planned", ...
const char* StateName(EntryState s);  // "pending", ...
const char* JobKindName(JobKind k);   // "canary", "array"
// The reverse: false (out untouched) for a name that is not one.
bool ParseStateName(std::string_view name, SweepState& out);
bool ParseStateName(std::string_view name, JobState& out);
bool ParseStateName(std::string_view name, EntryState& out);
bool ParseJobKind(std::string_view name, JobKind& out);
// succeeded, failed, cancelled, skipped.
bool IsFinal(EntryState s);

// ---- what a new sweep is made of ------------------------------------------------

// A job to plan. Invariants (checked): key and job_name non-empty;
// array_size >= 1; throttle >= 0 (0 = no %N); depends_on empty or the key
// of a job of the same sweep.
struct NewJob {
  std::string key;  // unique within the sweep: "canary", "bucket:8k1k"
  JobKind kind = JobKind::kArray;
  std::string job_name;
  std::string script_path;
  int64_t array_size = 1;
  int64_t throttle = 0;
  std::string depends_on;  // "" = none
};

// A matrix entry to plan. Invariants (checked): index unique in the sweep
// (its position in the sweep's matrix file); job_key names a job of the
// sweep; an array job's entries have array_index in [0, array_size), unique
// per job; a canary's entry has none.
struct NewEntry {
  int64_t index = 0;
  std::string job_key;
  std::optional<int64_t> array_index;
  std::string bucket;
  std::string config_key;
  std::string arm;     // "tp4", "tep4", "dep4"
  std::string recipe;
  int64_t conc = 0;
  std::string entry_json;  // the entry as the matrix file holds it
};

// A sweep with its whole plan, created in one transaction so a sweep never
// exists without its jobs and entries. `id` empty: a new id is made.
struct NewSweep {
  std::string id;
  SweepMode mode = SweepMode::kFullSweepEnabled;
  std::string sweep_dir;
  std::vector<std::string> argv;  // the command line, stored as a JSON array
  std::vector<NewJob> jobs;       // in submission order
  std::vector<NewEntry> entries;
};

// ---- what the store holds ----------------------------------------------------------

// A sweep as stored; updated_at is when its state was last set.
struct SweepRecord {
  std::string id;
  SweepMode mode = SweepMode::kFullSweepEnabled;
  double created_at = 0;
  double updated_at = 0;
  std::string sweep_dir;
  std::vector<std::string> argv;
  SweepState state = SweepState::kSubmitting;
};

// A job as stored: its plan, and how far its two-phase submission got.
struct JobRecord {
  std::string sweep_id;
  std::string key;
  int64_t seq = 0;  // submission order within the sweep
  JobKind kind = JobKind::kArray;
  std::string job_name;
  std::string script_path;
  std::optional<int64_t> slurm_job_id;  // set by MarkSubmitted
  int64_t array_size = 1;
  int64_t throttle = 0;
  std::string depends_on;
  JobState state = JobState::kPlanned;
  std::string submit_token;  // "SWEEP/KEY/ATTEMPT", set by MarkSubmitting (e.g. for --comment)
  int64_t submit_attempts = 0;
  std::optional<double> submitting_at, submitted_at;
  // sbatch may have run for this job but its id was never recorded.
  bool NeedsLookup() const { return state == JobState::kSubmitting; }
};

// An entry as stored: its plan, the Slurm task running it, and its outcome.
struct EntryRecord {
  std::string sweep_id;
  int64_t index = 0;
  std::string job_key;
  std::optional<int64_t> array_index;
  std::string bucket, config_key, arm, recipe;
  int64_t conc = 0;
  std::string entry_json;
  EntryState state = EntryState::kPending;
  std::string slurm_task_id;  // "123_4" (array) or "123" (canary); "" until submitted
  std::optional<double> started_at, ended_at;
  std::optional<int64_t> exit_code;
  std::string failure_reason, failure_process, result_path;
  double updated_at = 0;
};

// How many entries of a sweep are in each state.
struct EntryCounts {
  int64_t pending = 0, running = 0, succeeded = 0, failed = 0, cancelled = 0, skipped = 0;
  int64_t total() const { return pending + running + succeeded + failed + cancelled + skipped; }
};

// A sweep with its entry counts, as ListSweeps gives it.
struct SweepSummary {
  SweepRecord sweep;
  EntryCounts counts;
};

// A sweep with its jobs (by seq) and entries (by index).
struct LoadedSweep {
  SweepRecord sweep;
  std::vector<JobRecord> jobs;
  std::vector<EntryRecord> entries;
  const JobRecord* FindJob(std::string_view key) const;
};

// A change to one entry: the new state, plus the fields to set (absent ones
// keep their value).
struct EntryUpdate {
  int64_t index = 0;
  EntryState state = EntryState::kPending;
  std::optional<std::string> slurm_task_id;
  std::optional<double> started_at, ended_at;
  std::optional<int64_t> exit_code;
  std::optional<std::string> failure_reason, failure_process, result_path;
};

// What UpdateEntryState does with an entry already in a final state that
// the update would change to another state.
enum class FinalEntries : uint8_t {
  kRefuse,  // an error; nothing of the batch is written
  kKeep,    // left as it is, silently (a watcher that re-reads Slurm)
  kReopen,  // changed, explicitly (a re-run); end time, exit code and failure are cleared
};

}  // namespace ix
