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
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/sqlite_db.h"
#include "submitter/sweep/sweep_db.h"       // DefaultDbPath, LegacyDbPath
#include "submitter/sweep/sweep_records.h"  // the states and records below
#include "submitter/sweep/sweep_schema.h"   // kSweepStoreSchemaVersion

namespace ix {

// ---- the store ---------------------------------------------------------------------

// One connection to the sweep database (see the top of this file).
// Invariant: the schema is kSweepStoreSchemaVersion's from Open on.
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

  const std::string& path() const { return db_.path(); }

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
  explicit SweepStore(SqliteDb db) : db_(std::move(db)) {}

  SqliteDb db_;
};

}  // namespace ix
