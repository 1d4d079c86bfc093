// The sweep store's rows (sweep_store.h), below its API: records read from
// and written to the tables of sweep_schema.cc, the checks a new plan
// passes before any of it is written, and the lookups the store's
// operations share. Each write runs inside the caller's transaction;
// errors name the database path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/sqlite_db.h"
#include "submitter/sweep/sweep_records.h"

namespace ix {

// ---- records from rows: SELECT kXColumns, then ReadX on each row --------------

inline constexpr const char* kSweepColumns = "id, mode, created_at, updated_at, sweep_dir, argv, state";
inline constexpr const char* kJobColumns =
    "sweep_id, job_key, seq, kind, job_name, script_path, slurm_job_id, array_size, throttle, depends_on, state, "
    "submit_token, submit_attempts, submitting_at, submitted_at";
inline constexpr const char* kEntryColumns =
    "sweep_id, entry_index, job_key, array_index, bucket, config_key, arm, recipe, conc, entry_json, state, "
    "slurm_task_id, started_at, ended_at, exit_code, failure_reason, failure_process, result_path, updated_at";

// A row whose names do not parse is "damaged": an error naming it.
Result<SweepRecord> ReadSweep(const SqliteDb& db, const SqlStatement& s);
Result<JobRecord> ReadJob(const SqliteDb& db, const SqlStatement& s);
Result<EntryRecord> ReadEntry(const SqliteDb& db, const SqlStatement& s);

// ---- checks of a new plan (the invariants of NewJob and NewEntry) ---------------

// Letters, digits, '-', '_' and '.', 1 to 128 of them: a caller's sweep id.
bool IsIdToken(std::string_view s);

// What the checks of new entries need to know about a job, by job key.
struct JobShape {
  JobKind kind;
  int64_t array_size;
};
using JobShapes = std::map<std::string, JobShape>;

// Checks `jobs` in order against `known` (the sweep's jobs so far), which
// gains each: a dependency must be planned before its dependent.
Status CheckJobs(const std::vector<NewJob>& jobs, JobShapes& known);
Status CheckEntries(const std::vector<NewEntry>& entries, const JobShapes& jobs);

// ---- writes -------------------------------------------------------------------------

// The sweeps row, state submitting. `duplicate_id`: set when the id is taken.
Status InsertSweep(const SqliteDb& db, const std::string& id, const NewSweep& sweep, double now, bool& duplicate_id);
// Jobs planned, numbered from `first_seq` in order.
Status InsertJobs(const SqliteDb& db, const std::string& sweep_id, const std::vector<NewJob>& jobs,
                  int64_t first_seq);
// Entries pending.
Status InsertEntries(const SqliteDb& db, const std::string& sweep_id, const std::vector<NewEntry>& entries,
                     double now);

// ---- lookups ------------------------------------------------------------------------

// The ids of the `limit` newest sweeps, newest first.
Result<std::vector<std::string>> RecentIds(const SqliteDb& db, int limit);
// The error for a sweep id that is not in the database: it names the most
// recent ones.
Error NoSuchSweep(const SqliteDb& db, const std::string& id);
Status CheckSweepExists(const SqliteDb& db, const std::string& id);
// The shapes of a sweep's jobs; `max_seq`, when given, gets the largest
// seq (-1 for none).
Result<JobShapes> KnownJobs(const SqliteDb& db, const std::string& sweep_id, int64_t* max_seq);
// One job; an unknown sweep or key is an error naming what there is.
Result<JobRecord> LoadJob(const SqliteDb& db, const std::string& sweep_id, const std::string& key);
// "job 'KEY' of sweep ID", as errors name a job.
std::string JobWhere(const std::string& sweep_id, const std::string& key);

}  // namespace ix
