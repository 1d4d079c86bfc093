#include "submitter/sweep/sweep_store.h"

#include <chrono>

#include "submitter/sweep/sweep_id.h"
#include "submitter/sweep/sweep_rows.h"

namespace ix {
namespace {

double NowSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Whether `job` may go to sbatch now: planned, and its dependency (if any)
// has a Slurm job id to name in --dependency.
Status CheckSubmittable(const SqliteDb& db, const std::string& where, const JobRecord& j) {
  switch (j.state) {
    case JobState::kPlanned: break;
    case JobState::kSubmitting:
      return db.Plain(where + " is already being submitted (attempt " + std::to_string(j.submit_attempts) +
                      ", token " + j.submit_token + "): look it up by its job name '" + j.job_name +
                      "' first, then MarkSubmitted or AbandonSubmission");
    case JobState::kSubmitted:
      return db.Plain(where + " is already submitted as Slurm job " + std::to_string(j.slurm_job_id.value_or(0)) +
                      "; refusing to submit it twice");
    default: return db.Plain(where + " is " + StateName(j.state) + "; it cannot be submitted");
  }
  if (j.depends_on.empty()) return Ok{};
  Result<JobRecord> dep = LoadJob(db, j.sweep_id, j.depends_on);
  if (!dep) return dep.error();
  if (!dep.value().slurm_job_id) {
    return db.Plain(where + " depends on job '" + j.depends_on + "', which has no Slurm job id yet (" +
                    StateName(dep.value().state) + ")");
  }
  return Ok{};
}

// The statements UpdateEntryStates runs for each entry, prepared once.
struct EntryStatements {
  explicit EntryStatements(const SqliteDb& db)
      : get(db, "SELECT state FROM entries WHERE sweep_id = ?1 AND entry_index = ?2"),
        reopen(db,
               "UPDATE entries SET ended_at = NULL, exit_code = NULL, failure_reason = NULL, failure_process = NULL "
               "WHERE sweep_id = ?1 AND entry_index = ?2"),
        // Writes only when something differs, so a watcher repeating what
        // it saw costs a read, and Changes() says whether it changed.
        set(db,
            "UPDATE entries SET state = ?3, slurm_task_id = COALESCE(?4, slurm_task_id), "
            "started_at = COALESCE(?5, started_at), ended_at = COALESCE(?6, ended_at), "
            "exit_code = COALESCE(?7, exit_code), failure_reason = COALESCE(?8, failure_reason), "
            "failure_process = COALESCE(?9, failure_process), result_path = COALESCE(?10, result_path), "
            "updated_at = ?11 "
            "WHERE sweep_id = ?1 AND entry_index = ?2 AND (state IS NOT ?3 "
            "OR slurm_task_id IS NOT COALESCE(?4, slurm_task_id) OR started_at IS NOT COALESCE(?5, started_at) "
            "OR ended_at IS NOT COALESCE(?6, ended_at) OR exit_code IS NOT COALESCE(?7, exit_code) "
            "OR failure_reason IS NOT COALESCE(?8, failure_reason) "
            "OR failure_process IS NOT COALESCE(?9, failure_process) "
            "OR result_path IS NOT COALESCE(?10, result_path))") {}
  bool ok() const { return get.ok() && reopen.ok() && set.ok(); }

  SqlStatement get, reopen, set;
};

// The stored state of entry `index`. An unknown entry is an error; the
// first one of a batch checks whether it is the sweep that is unknown.
Result<EntryState> StoredEntryState(const SqliteDb& db, SqlStatement& get, const std::string& sweep_id,
                                    int64_t index, bool& checked_sweep) {
  const std::string where = "sweep " + sweep_id + " entry " + std::to_string(index);
  get.Reset();
  get.BindAll(sweep_id, index);
  const SqlStatement::StepResult rc = get.Step();
  if (rc == SqlStatement::kDone) {
    if (!checked_sweep) {
      if (Status s = CheckSweepExists(db, sweep_id); !s) return s.error();
    }
    return db.Plain("sweep " + sweep_id + " has no entry " + std::to_string(index));
  }
  if (rc != SqlStatement::kRow) return db.Fail("cannot read " + where);
  checked_sweep = true;
  EntryState cur = EntryState::kPending;
  if (!ParseStateName(get.Text(0), cur)) return db.Plain(where + ": damaged row: state '" + get.Text(0) + "'");
  return cur;
}

// One update of UpdateEntryStates; whether it changed the entry.
Result<bool> ApplyEntryUpdate(const SqliteDb& db, EntryStatements& st, const std::string& sweep_id,
                              const EntryUpdate& u, FinalEntries final_entries, double now, bool& checked_sweep) {
  const std::string where = "sweep " + sweep_id + " entry " + std::to_string(u.index);
  Result<EntryState> cur = StoredEntryState(db, st.get, sweep_id, u.index, checked_sweep);
  if (!cur) return cur.error();
  if (IsFinal(cur.value()) && u.state != cur.value()) {
    if (final_entries == FinalEntries::kKeep) return false;
    if (final_entries == FinalEntries::kRefuse) {
      return db.Plain(where + " is already " + StateName(cur.value()) + "; refusing to make it " +
                      StateName(u.state) + " (a final state changes only when reopened explicitly)");
    }
    // What the old outcome recorded does not describe the new one.
    st.reopen.Reset();
    st.reopen.BindAll(sweep_id, u.index);
    if (st.reopen.Step() != SqlStatement::kDone) return db.Fail("cannot reopen " + where);
  }
  st.set.Reset();
  st.set.BindAll(sweep_id, u.index, StateName(u.state), u.slurm_task_id, u.started_at, u.ended_at, u.exit_code,
                 u.failure_reason, u.failure_process, u.result_path, now);
  if (st.set.Step() != SqlStatement::kDone) return db.Fail("cannot update " + where);
  return db.Changes() > 0;
}

}  // namespace

// ---- opening ----------------------------------------------------------------------------

Result<SweepStore> SweepStore::Open(const std::string& path) {
  Result<SqliteDb> db = OpenSweepDatabase(path);
  if (!db) return db.error();
  return SweepStore(std::move(db).value());
}

SweepStore::SweepStore(SweepStore&& other) noexcept = default;
SweepStore& SweepStore::operator=(SweepStore&& other) noexcept = default;
SweepStore::~SweepStore() = default;

// ---- sweeps, jobs and entries planned -------------------------------------------------

Result<std::string> SweepStore::CreateSweep(const NewSweep& sweep) {
  if (!sweep.id.empty() && !IsIdToken(sweep.id)) {
    return db_.Plain("sweep id '" + sweep.id + "': use letters, digits, '-', '_' and '.'");
  }
  JobShapes known;
  if (Status s = CheckJobs(sweep.jobs, known); !s) return db_.Plain("new sweep: " + s.error().message);
  if (Status s = CheckEntries(sweep.entries, known); !s) return db_.Plain("new sweep: " + s.error().message);

  // A made-up id can collide with one made in the same second: try another.
  for (int attempt = 0;; ++attempt) {
    const double now = NowSeconds();
    const std::string id = sweep.id.empty() ? NewSweepId(now) : sweep.id;
    bool collided = false;
    Result<std::string> r = db_.Write<std::string>("create sweep " + id, [&]() -> Result<std::string> {
      if (Status st = InsertSweep(db_, id, sweep, now, collided); !st) return st.error();
      if (Status st = InsertJobs(db_, id, sweep.jobs, 0); !st) return st.error();
      if (Status st = InsertEntries(db_, id, sweep.entries, now); !st) return st.error();
      return id;
    });
    if (r || !collided || !sweep.id.empty() || attempt >= 8) return r;
  }
}

Status SweepStore::AddJobs(const std::string& sweep_id, const std::vector<NewJob>& jobs) {
  return db_.Write<Ok>("add jobs to sweep " + sweep_id, [&]() -> Status {
    if (Status s = CheckSweepExists(db_, sweep_id); !s) return s;
    int64_t max_seq = -1;
    Result<JobShapes> known = KnownJobs(db_, sweep_id, &max_seq);
    if (!known) return known.error();
    if (Status s = CheckJobs(jobs, known.value()); !s) return db_.Plain("sweep " + sweep_id + ": " + s.error().message);
    return InsertJobs(db_, sweep_id, jobs, max_seq + 1);
  });
}

Status SweepStore::AddEntries(const std::string& sweep_id, const std::vector<NewEntry>& entries) {
  return db_.Write<Ok>("add entries to sweep " + sweep_id, [&]() -> Status {
    if (Status s = CheckSweepExists(db_, sweep_id); !s) return s;
    Result<JobShapes> known = KnownJobs(db_, sweep_id, nullptr);
    if (!known) return known.error();
    if (Status s = CheckEntries(entries, known.value()); !s) {
      return db_.Plain("sweep " + sweep_id + ": " + s.error().message);
    }
    return InsertEntries(db_, sweep_id, entries, NowSeconds());
  });
}

Status SweepStore::SetSweepState(const std::string& sweep_id, SweepState state) {
  return db_.Write<Ok>("set the state of sweep " + sweep_id, [&]() -> Status {
    if (Status s = RunSql(db_, "UPDATE sweeps SET state = ?2, updated_at = ?3 WHERE id = ?1",
                          "set the state of sweep " + sweep_id, sweep_id, StateName(state), NowSeconds());
        !s) {
      return s;
    }
    if (db_.Changes() == 0) return NoSuchSweep(db_, sweep_id);
    return Ok{};
  });
}

// ---- reading ------------------------------------------------------------------------------

Result<std::vector<SweepSummary>> SweepStore::ListSweeps() {
  const std::string sql =
      "SELECT s.id, s.mode, s.created_at, s.updated_at, s.sweep_dir, s.argv, s.state, "
      "COALESCE(SUM(e.state = 'pending'), 0), COALESCE(SUM(e.state = 'running'), 0), "
      "COALESCE(SUM(e.state = 'succeeded'), 0), COALESCE(SUM(e.state = 'failed'), 0), "
      "COALESCE(SUM(e.state = 'cancelled'), 0), COALESCE(SUM(e.state = 'skipped'), 0) "
      "FROM sweeps s LEFT JOIN entries e ON e.sweep_id = s.id "
      "GROUP BY s.id ORDER BY s.created_at DESC, s.id DESC";
  return SelectRows<SweepSummary>(db_, sql, "cannot list sweeps", [&](const SqlStatement& s) -> Result<SweepSummary> {
    Result<SweepRecord> sw = ReadSweep(db_, s);
    if (!sw) return sw.error();
    SweepSummary sum{std::move(sw).value(), {}};
    sum.counts = {s.Int(7), s.Int(8), s.Int(9), s.Int(10), s.Int(11), s.Int(12)};
    return sum;
  });
}

Result<LoadedSweep> SweepStore::LoadSweep(const std::string& sweep_id) {
  return db_.Read<LoadedSweep>("load sweep " + sweep_id, [&]() -> Result<LoadedSweep> {
    LoadedSweep out;
    {
      SqlStatement s(db_, std::string("SELECT ") + kSweepColumns + " FROM sweeps WHERE id = ?1");
      if (!s.ok()) return db_.Fail("cannot load sweep " + sweep_id);
      s.BindAll(sweep_id);
      const SqlStatement::StepResult rc = s.Step();
      if (rc == SqlStatement::kDone) return NoSuchSweep(db_, sweep_id);
      if (rc != SqlStatement::kRow) return db_.Fail("cannot load sweep " + sweep_id);
      Result<SweepRecord> sw = ReadSweep(db_, s);
      if (!sw) return sw.error();
      out.sweep = std::move(sw).value();
    }
    const auto read_job = [&](const SqlStatement& s) { return ReadJob(db_, s); };
    Result<std::vector<JobRecord>> jobs =
        SelectRows<JobRecord>(db_, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE sweep_id = ?1 ORDER BY seq",
                              "cannot load the jobs of sweep " + sweep_id, read_job, sweep_id);
    if (!jobs) return jobs.error();
    out.jobs = std::move(jobs).value();
    const auto read_entry = [&](const SqlStatement& s) { return ReadEntry(db_, s); };
    Result<std::vector<EntryRecord>> entries = SelectRows<EntryRecord>(
        db_, std::string("SELECT ") + kEntryColumns + " FROM entries WHERE sweep_id = ?1 ORDER BY entry_index",
        "cannot load the entries of sweep " + sweep_id, read_entry, sweep_id);
    if (!entries) return entries.error();
    out.entries = std::move(entries).value();
    return out;
  });
}

Result<std::string> SweepStore::LatestSweepId() {
  Result<std::vector<std::string>> ids = RecentIds(db_, 1);
  if (!ids) return ids.error();
  if (ids.value().empty()) return db_.Plain("no sweeps are recorded here yet");
  return ids.value().front();
}

// ---- two-phase submission -----------------------------------------------------------------

Result<JobRecord> SweepStore::MarkSubmitting(const std::string& sweep_id, const std::string& job_key) {
  const std::string where = JobWhere(sweep_id, job_key);
  return db_.Write<JobRecord>("mark " + where + " as submitting", [&]() -> Result<JobRecord> {
    Result<JobRecord> job = LoadJob(db_, sweep_id, job_key);
    if (!job) return job.error();
    JobRecord& j = job.value();
    if (Status s = CheckSubmittable(db_, where, j); !s) return s.error();
    j.state = JobState::kSubmitting;
    j.submit_attempts += 1;
    j.submit_token = sweep_id + "/" + job_key + "/" + std::to_string(j.submit_attempts);
    j.submitting_at = NowSeconds();
    if (Status s = RunSql(db_,
                          "UPDATE jobs SET state = 'submitting', submit_attempts = ?3, submit_token = ?4, "
                          "submitting_at = ?5 WHERE sweep_id = ?1 AND job_key = ?2",
                          "mark " + where + " as submitting", sweep_id, job_key, j.submit_attempts, j.submit_token,
                          *j.submitting_at);
        !s) {
      return s.error();
    }
    return j;
  });
}

Status SweepStore::MarkSubmitted(const std::string& sweep_id, const std::string& job_key, int64_t slurm_job_id) {
  const std::string where = JobWhere(sweep_id, job_key);
  if (slurm_job_id <= 0) return db_.Plain(where + ": Slurm job id " + std::to_string(slurm_job_id) + " is not valid");
  return db_.Write<Ok>("mark " + where + " as submitted", [&]() -> Status {
    Result<JobRecord> job = LoadJob(db_, sweep_id, job_key);
    if (!job) return job.error();
    const JobRecord& j = job.value();
    if (j.state == JobState::kSubmitted || (j.slurm_job_id && j.state != JobState::kSubmitting)) {
      if (j.slurm_job_id == slurm_job_id) return Ok{};
      return db_.Plain(where + " is already recorded as Slurm job " + std::to_string(j.slurm_job_id.value_or(0)) +
                       ", not " + std::to_string(slurm_job_id));
    }
    if (j.state != JobState::kSubmitting) {
      return db_.Plain(where + " is " + StateName(j.state) + ", not submitting: call MarkSubmitting before sbatch");
    }
    const double now = NowSeconds();
    if (Status s = RunSql(db_,
                          "UPDATE jobs SET state = 'submitted', slurm_job_id = ?3, submitted_at = ?4 "
                          "WHERE sweep_id = ?1 AND job_key = ?2",
                          "mark " + where + " as submitted", sweep_id, job_key, slurm_job_id, now);
        !s) {
      return s;
    }
    return RunSql(db_,
                  "UPDATE entries SET slurm_task_id = CASE WHEN array_index IS NULL THEN ?3 "
                  "ELSE ?3 || '_' || array_index END, updated_at = ?4 WHERE sweep_id = ?1 AND job_key = ?2",
                  "record the task ids of " + where, sweep_id, job_key, std::to_string(slurm_job_id), now);
  });
}

Status SweepStore::AbandonSubmission(const std::string& sweep_id, const std::string& job_key) {
  const std::string where = JobWhere(sweep_id, job_key);
  return db_.Write<Ok>("abandon the submission of " + where, [&]() -> Status {
    Result<JobRecord> job = LoadJob(db_, sweep_id, job_key);
    if (!job) return job.error();
    if (job.value().state != JobState::kSubmitting) {
      return db_.Plain(where + " is " + StateName(job.value().state) + ", not submitting; nothing to abandon");
    }
    return RunSql(db_, "UPDATE jobs SET state = 'planned' WHERE sweep_id = ?1 AND job_key = ?2",
                  "abandon the submission of " + where, sweep_id, job_key);
  });
}

Result<std::vector<JobRecord>> SweepStore::JobsNeedingSubmission(const std::string& sweep_id) {
  const std::string what = "read the jobs of sweep " + sweep_id;
  return db_.Read<std::vector<JobRecord>>(what, [&]() -> Result<std::vector<JobRecord>> {
    if (Status s = CheckSweepExists(db_, sweep_id); !s) return s.error();
    return SelectRows<JobRecord>(
        db_,
        std::string("SELECT ") + kJobColumns +
            " FROM jobs WHERE sweep_id = ?1 AND state IN ('planned', 'submitting') ORDER BY seq",
        "cannot " + what, [&](const SqlStatement& s) { return ReadJob(db_, s); }, sweep_id);
  });
}

// ---- job and entry states -----------------------------------------------------------------

Result<int64_t> SweepStore::MarkJobCancelled(const std::string& sweep_id, const std::string& job_key,
                                              const std::string& reason) {
  const std::string where = JobWhere(sweep_id, job_key);
  return db_.Write<int64_t>("cancel " + where, [&]() -> Result<int64_t> {
    Result<JobRecord> job = LoadJob(db_, sweep_id, job_key);
    if (!job) return job.error();
    if (Status s = RunSql(db_, "UPDATE jobs SET state = 'cancelled' WHERE sweep_id = ?1 AND job_key = ?2",
                          "cancel " + where, sweep_id, job_key);
        !s) {
      return s.error();
    }
    const std::optional<std::string> why = reason.empty() ? std::nullopt : std::optional<std::string>(reason);
    if (Status s = RunSql(db_,
                          "UPDATE entries SET state = 'cancelled', failure_reason = COALESCE(failure_reason, ?3), "
                          "ended_at = COALESCE(ended_at, ?4), updated_at = ?4 "
                          "WHERE sweep_id = ?1 AND job_key = ?2 AND state IN ('pending', 'running')",
                          "cancel the entries of " + where, sweep_id, job_key, why, NowSeconds());
        !s) {
      return s.error();
    }
    return db_.Changes();
  });
}

Status SweepStore::SetJobState(const std::string& sweep_id, const std::string& job_key, JobState state) {
  const std::string where = JobWhere(sweep_id, job_key);
  if (state == JobState::kPlanned || state == JobState::kSubmitting || state == JobState::kSubmitted) {
    return db_.Plain(where + ": a job becomes " + StateName(state) +
                     " only through MarkSubmitting, MarkSubmitted and AbandonSubmission");
  }
  return db_.Write<Ok>("set the state of " + where, [&]() -> Status {
    Result<JobRecord> job = LoadJob(db_, sweep_id, job_key);
    if (!job) return job.error();
    const JobState cur = job.value().state;
    if (cur == state) return Ok{};
    if (state == JobState::kFinished && cur != JobState::kSubmitted) {
      return db_.Plain(where + " is " + StateName(cur) + "; only a submitted job can finish");
    }
    if (cur == JobState::kFinished) return db_.Plain(where + " has finished; it cannot become " + StateName(state));
    return RunSql(db_, "UPDATE jobs SET state = ?3 WHERE sweep_id = ?1 AND job_key = ?2",
                  "set the state of " + where, sweep_id, job_key, StateName(state));
  });
}

Result<bool> SweepStore::UpdateEntryState(const std::string& sweep_id, const EntryUpdate& update,
                                          FinalEntries final_entries) {
  Result<int64_t> n = UpdateEntryStates(sweep_id, {update}, final_entries);
  if (!n) return n.error();
  return n.value() > 0;
}

Result<int64_t> SweepStore::UpdateEntryStates(const std::string& sweep_id, const std::vector<EntryUpdate>& updates,
                                              FinalEntries final_entries) {
  return db_.Write<int64_t>("update entries of sweep " + sweep_id, [&]() -> Result<int64_t> {
    EntryStatements st(db_);
    if (!st.ok()) return db_.Fail("cannot prepare to update entries");
    const double now = NowSeconds();
    int64_t changed = 0;
    bool checked_sweep = false;
    for (const EntryUpdate& u : updates) {
      Result<bool> r = ApplyEntryUpdate(db_, st, sweep_id, u, final_entries, now, checked_sweep);
      if (!r) return r.error();
      changed += r.value() ? 1 : 0;
    }
    return changed;
  });
}

}  // namespace ix
