// SweepStore: the state of sweeps in an SQLite database, so the submitter
// can be killed at any point and resumed without submitting anything twice,
// and `ixsubmit status` can read it from another process while a sweep runs.
//
// Tables: `sweeps` (one per `ixsubmit sweep`), `jobs` (the canary and one
// Slurm array per bucket, each with its place in the two-phase submission),
// `entries` (one per matrix entry: which job and array task runs it, its
// state, times, failure and result). Times are unix seconds (REAL).
//
// Durability and concurrency: WAL journal (readers never block the writer),
// synchronous=FULL (a MarkSubmitting survives a power cut, not only a
// kill), busy_timeout 5 s, foreign keys on, and every change, single- or
// multi-row, is one BEGIN IMMEDIATE transaction, so writers queue on the
// lock instead of failing with "database is locked" when a read upgrades.
// The schema version is PRAGMA user_version; a newer one is refused.
//
// Two-phase submission, per job: MarkSubmitting (planned -> submitting,
// committed) before sbatch, MarkSubmitted (submitting -> submitted, with the
// Slurm job id) after. A job found in `submitting` on resume may or may not
// exist in Slurm: the caller looks it up by job name (SlurmCli::
// FindJobsByName) and either records the id it finds with MarkSubmitted or,
// when nothing has that name, calls AbandonSubmission and submits again.
//
// Entries in a final state (succeeded, failed, cancelled, skipped) keep it:
// UpdateEntryState refuses to move them unless told otherwise.
//
// A SweepStore is one connection; use it from one thread, and open a new one
// in a forked child (an SQLite connection must not cross fork()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/sweep_mode.h"

struct sqlite3;

namespace ix {

// The schema this build writes and reads.
inline constexpr int kSweepStoreSchemaVersion = 1;

// $XDG_STATE_HOME/inferencex/ix.db when XDG_STATE_HOME is set to an
// absolute path (the XDG spec ignores relative ones), else $HOME/.local/
// state/inferencex/ix.db: state, not data, and per machine by intent (a
// WAL database must not be shared across hosts, as on an NFS home). `env`
// is NAME=VALUE strings (CurrentEnvironment()). An error when neither gives
// an absolute path. Creates nothing.
Result<std::string> DefaultDbPath(const std::vector<std::string>& env);
// Where earlier builds put it ($XDG_DATA_HOME or ~/.local/share); still read
// when a database is there, so existing sweeps stay resumable.
std::optional<std::string> LegacyDbPath(const std::vector<std::string>& env);

// ---- states -------------------------------------------------------------------

enum class SweepState : uint8_t { kSubmitting, kRunning, kSucceeded, kFailed, kCancelled };
enum class JobKind : uint8_t { kCanary, kArray };
// planned: not yet given to sbatch; submitting: sbatch may have run (see the
// header comment); submitted: has a Slurm job id; cancelled: scancel'ed by
// us; finished: every task of it is in a final state.
enum class JobState : uint8_t { kPlanned, kSubmitting, kSubmitted, kCancelled, kFinished };
enum class EntryState : uint8_t { kPending, kRunning, kSucceeded, kFailed, kCancelled, kSkipped };

const char* StateName(SweepState s);  // "submitting", ...
const char* StateName(JobState s);    // "planned", ...
const char* StateName(EntryState s);  // "pending", ...
const char* JobKindName(JobKind k);   // "canary", "array"
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

struct SweepRecord {
  std::string id;
  SweepMode mode = SweepMode::kFullSweepEnabled;
  double created_at = 0;
  double updated_at = 0;
  std::string sweep_dir;
  std::vector<std::string> argv;
  SweepState state = SweepState::kSubmitting;
};

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

struct EntryCounts {
  int64_t pending = 0, running = 0, succeeded = 0, failed = 0, cancelled = 0, skipped = 0;
  int64_t total() const { return pending + running + succeeded + failed + cancelled + skipped; }
};

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

// ---- the store ---------------------------------------------------------------------

class SweepStore {
 public:
  // Opens (creating it, and missing parent directories 0700) the database
  // at `path` and brings its schema to kSweepStoreSchemaVersion. Errors
  // name the path: a file that is not an SQLite database (it is left
  // untouched), a schema newer than this build, an unrelated database.
  static Result<SweepStore> Open(const std::string& path);

  SweepStore(SweepStore&& other) noexcept;
  SweepStore& operator=(SweepStore&& other) noexcept;
  SweepStore(const SweepStore&) = delete;
  SweepStore& operator=(const SweepStore&) = delete;
  ~SweepStore();

  const std::string& path() const { return path_; }

  // Creates the sweep (state submitting) with its jobs and entries; returns
  // its id ("sw-20261202-160900-ab12" when made here, UTC).
  Result<std::string> CreateSweep(const NewSweep& sweep);
  // More jobs or entries for an existing sweep, each call one transaction.
  Status AddJobs(const std::string& sweep_id, const std::vector<NewJob>& jobs);
  Status AddEntries(const std::string& sweep_id, const std::vector<NewEntry>& entries);
  Status SetSweepState(const std::string& sweep_id, SweepState state);

  // Newest first.
  Result<std::vector<SweepSummary>> ListSweeps();
  // An unknown id errors with the most recent ids.
  Result<LoadedSweep> LoadSweep(const std::string& sweep_id);
  // The newest sweep's id; an error when there is none.
  Result<std::string> LatestSweepId();

  // Two-phase submission (header comment). MarkSubmitting: planned ->
  // submitting, counting an attempt and setting a new submit_token; refused
  // for a job in any other state and for one whose dependency has no Slurm
  // id yet. Returns the job as recorded.
  Result<JobRecord> MarkSubmitting(const std::string& sweep_id, const std::string& job_key);
  // submitting -> submitted with `slurm_job_id`; sets every entry's
  // slurm_task_id ("ID_INDEX" for arrays, "ID" for the canary). Repeating it
  // with the same id is a no-op; a different id is an error.
  Status MarkSubmitted(const std::string& sweep_id, const std::string& job_key, int64_t slurm_job_id);
  // submitting -> planned, when a lookup by job name proved sbatch created
  // nothing (or sbatch itself rejected the job).
  Status AbandonSubmission(const std::string& sweep_id, const std::string& job_key);
  // Jobs in planned or submitting (NeedsLookup), in submission order.
  Result<std::vector<JobRecord>> JobsNeedingSubmission(const std::string& sweep_id);
  // Job -> cancelled, and its entries not yet final -> cancelled with
  // `reason` (unless they have one) and an end time; returns how many
  // entries changed. One transaction.
  Result<int64_t> MarkJobCancelled(const std::string& sweep_id, const std::string& job_key,
                                   const std::string& reason);
  // submitted -> finished (or any state -> cancelled); submitting and
  // submitted are only reachable through the two-phase calls.
  Status SetJobState(const std::string& sweep_id, const std::string& job_key, JobState state);

  // Applies `update`; returns whether anything changed (a repeat of what is
  // stored changes nothing and writes nothing).
  Result<bool> UpdateEntryState(const std::string& sweep_id, const EntryUpdate& update,
                                FinalEntries final_entries = FinalEntries::kRefuse);
  // Many updates in one transaction, all or nothing; returns how many changed.
  Result<int64_t> UpdateEntryStates(const std::string& sweep_id, const std::vector<EntryUpdate>& updates,
                                    FinalEntries final_entries = FinalEntries::kRefuse);

 private:
  SweepStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace ix
