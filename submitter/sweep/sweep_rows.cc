#include "submitter/sweep/sweep_rows.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <optional>

namespace ix {
namespace {

// ---- argv as JSON ---------------------------------------------------------------

std::string ArgvToJson(const std::vector<std::string>& argv) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartArray();
  for (const std::string& a : argv) w.String(a.data(), static_cast<rapidjson::SizeType>(a.size()));
  w.EndArray();
  return std::string(buf.GetString(), buf.GetSize());
}

bool ArgvFromJson(const std::string& text, std::vector<std::string>& out) {
  rapidjson::Document d;
  d.Parse(text.data(), text.size());
  if (d.HasParseError() || !d.IsArray()) return false;
  out.clear();
  for (const auto& v : d.GetArray()) {
    if (!v.IsString()) return false;
    out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return true;
}

// The text, or NULL for "" (an optional column such as depends_on).
std::optional<std::string> NullIfEmpty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

}  // namespace

// ---- records from rows ------------------------------------------------------------

// Each reader names the columns of its table's SELECT (kSweepColumns,
// kJobColumns, kEntryColumns) by position; a row whose named values do not
// parse is damaged.

Result<SweepRecord> ReadSweep(const SqliteDb& db, const SqlStatement& s) {
  SweepRecord r{.id = s.Text(0), .created_at = s.Real(2), .updated_at = s.Real(3), .sweep_dir = s.Text(4)};
  Result<SweepMode> mode = ParseSweepMode(s.Text(1));
  if (!mode) return db.Plain("sweep " + r.id + ": damaged row: " + mode.error().message);
  r.mode = mode.value();
  if (!ArgvFromJson(s.Text(5), r.argv)) {
    return db.Plain("sweep " + r.id + ": damaged row: argv is not a JSON string array");
  }
  if (!ParseStateName(s.Text(6), r.state)) return db.Plain("sweep " + r.id + ": damaged row: state '" + s.Text(6) + "'");
  return r;
}

Result<JobRecord> ReadJob(const SqliteDb& db, const SqlStatement& s) {
  JobKind kind;
  JobState state;
  if (!ParseJobKind(s.Text(3), kind)) return db.Plain("job " + s.Text(1) + ": damaged row: kind '" + s.Text(3) + "'");
  if (!ParseStateName(s.Text(10), state)) {
    return db.Plain("job " + s.Text(1) + ": damaged row: state '" + s.Text(10) + "'");
  }
  return JobRecord{.sweep_id = s.Text(0), .key = s.Text(1), .seq = s.Int(2), .kind = kind, .job_name = s.Text(4),
                   .script_path = s.Text(5), .slurm_job_id = s.OptInt(6), .array_size = s.Int(7),
                   .throttle = s.Int(8), .depends_on = s.Text(9), .state = state, .submit_token = s.Text(11),
                   .submit_attempts = s.Int(12), .submitting_at = s.OptReal(13), .submitted_at = s.OptReal(14)};
}

Result<EntryRecord> ReadEntry(const SqliteDb& db, const SqlStatement& s) {
  EntryState state;
  if (!ParseStateName(s.Text(10), state)) {
    return db.Plain("entry " + std::to_string(s.Int(1)) + ": damaged row: state '" + s.Text(10) + "'");
  }
  return EntryRecord{.sweep_id = s.Text(0), .index = s.Int(1), .job_key = s.Text(2), .array_index = s.OptInt(3),
                     .bucket = s.Text(4), .config_key = s.Text(5), .arm = s.Text(6), .recipe = s.Text(7),
                     .conc = s.Int(8), .entry_json = s.Text(9), .state = state, .slurm_task_id = s.Text(11),
                     .started_at = s.OptReal(12), .ended_at = s.OptReal(13), .exit_code = s.OptInt(14),
                     .failure_reason = s.Text(15), .failure_process = s.Text(16), .result_path = s.Text(17),
                     .updated_at = s.Real(18)};
}

// ---- checks -------------------------------------------------------------------------

bool IsIdToken(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                    ch == '_' || ch == '.';
    if (!ok) return false;
  }
  return true;
}

Status CheckJobs(const std::vector<NewJob>& jobs, JobShapes& known) {
  for (const NewJob& j : jobs) {
    const std::string where = "job '" + j.key + "'";
    if (j.key.empty()) return Error{"a job has an empty key"};
    if (known.count(j.key)) return Error{where + ": the sweep already has a job with this key"};
    if (j.job_name.empty()) return Error{where + ": empty job name"};
    if (j.array_size < 1) return Error{where + ": array_size " + std::to_string(j.array_size) + " < 1"};
    if (j.throttle < 0) return Error{where + ": throttle " + std::to_string(j.throttle) + " < 0"};
    if (!j.depends_on.empty()) {
      if (j.depends_on == j.key) return Error{where + ": depends on itself"};
      // Only on jobs planned before it: submission order must satisfy dependencies.
      if (!known.count(j.depends_on)) return Error{where + ": depends on '" + j.depends_on + "', which is not planned before it"};
    }
    known.emplace(j.key, JobShape{j.kind, j.array_size});
  }
  return Ok{};
}

Status CheckEntries(const std::vector<NewEntry>& entries, const JobShapes& jobs) {
  for (const NewEntry& e : entries) {
    const std::string where = "entry " + std::to_string(e.index);
    if (e.index < 0) return Error{where + ": negative index"};
    auto it = jobs.find(e.job_key);
    if (it == jobs.end()) return Error{where + ": no job '" + e.job_key + "' in the sweep"};
    if (it->second.kind == JobKind::kCanary) {
      if (e.array_index) return Error{where + ": the canary job '" + e.job_key + "' is not an array; no array index"};
    } else if (!e.array_index || *e.array_index < 0 || *e.array_index >= it->second.array_size) {
      return Error{where + ": array job '" + e.job_key + "' needs an array index in [0, " +
                   std::to_string(it->second.array_size) + ")" +
                   (e.array_index ? ", not " + std::to_string(*e.array_index) : std::string())};
    }
  }
  return Ok{};
}

// ---- writes -------------------------------------------------------------------------

Status InsertSweep(const SqliteDb& db, const std::string& id, const NewSweep& sweep, double now, bool& duplicate_id) {
  SqlStatement s(db,
                 "INSERT INTO sweeps (id, mode, created_at, updated_at, sweep_dir, argv, state) "
                 "VALUES (?1, ?2, ?3, ?3, ?4, ?5, 'submitting')");
  if (!s.ok()) return db.Fail("cannot prepare to create a sweep");
  s.BindAll(id, SweepModeName(sweep.mode), now, sweep.sweep_dir, ArgvToJson(sweep.argv));
  if (s.Step() != SqlStatement::kDone) {
    duplicate_id = db.LastErrorIsDuplicateKey();
    return db.Fail("cannot create sweep " + id);
  }
  return Ok{};
}

Status InsertJobs(const SqliteDb& db, const std::string& sweep_id, const std::vector<NewJob>& jobs,
                  int64_t first_seq) {
  int64_t seq = first_seq;
  return RunForEach(
      db,
      "INSERT INTO jobs (sweep_id, job_key, seq, kind, job_name, script_path, array_size, throttle, depends_on, "
      "state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'planned')",
      "add jobs", jobs,
      [&](SqlStatement& s, const NewJob& j) {
        s.BindAll(sweep_id, j.key, seq++, JobKindName(j.kind), j.job_name, j.script_path, j.array_size, j.throttle,
                  NullIfEmpty(j.depends_on));
      },
      [&](const NewJob& j) { return "add job '" + j.key + "' to sweep " + sweep_id; });
}

Status InsertEntries(const SqliteDb& db, const std::string& sweep_id, const std::vector<NewEntry>& entries,
                     double now) {
  return RunForEach(
      db,
      "INSERT INTO entries (sweep_id, entry_index, job_key, array_index, bucket, config_key, arm, recipe, conc, "
      "entry_json, state, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11)",
      "add entries", entries,
      [&](SqlStatement& s, const NewEntry& e) {
        s.BindAll(sweep_id, e.index, e.job_key, e.array_index, e.bucket, e.config_key, e.arm, e.recipe, e.conc,
                  e.entry_json, now);
      },
      [&](const NewEntry& e) {
        return "add entry " + std::to_string(e.index) + " (job '" + e.job_key + "') to sweep " + sweep_id;
      });
}

// ---- lookups ------------------------------------------------------------------------

Result<std::vector<std::string>> RecentIds(const SqliteDb& db, int limit) {
  return SelectRows<std::string>(
      db, "SELECT id FROM sweeps ORDER BY created_at DESC, id DESC LIMIT ?1", "cannot list sweeps",
      [](const SqlStatement& s) -> Result<std::string> { return s.Text(0); }, static_cast<int64_t>(limit));
}

Error NoSuchSweep(const SqliteDb& db, const std::string& id) {
  Result<std::vector<std::string>> recent = RecentIds(db, 5);
  std::string msg = "no sweep '" + id + "'";
  if (!recent || recent.value().empty()) {
    msg += "; no sweeps are recorded here yet";
  } else {
    msg += "; the most recent are: ";
    for (size_t i = 0; i < recent.value().size(); ++i) msg += (i ? ", " : "") + recent.value()[i];
    msg += " (`ixsubmit status` lists them all)";
  }
  return db.Plain(msg);
}

Status CheckSweepExists(const SqliteDb& db, const std::string& id) {
  SqlStatement s(db, "SELECT 1 FROM sweeps WHERE id = ?1");
  if (!s.ok()) return db.Fail("cannot look up sweep " + id);
  s.BindAll(id);
  const SqlStatement::StepResult rc = s.Step();
  if (rc == SqlStatement::kRow) return Ok{};
  if (rc != SqlStatement::kDone) return db.Fail("cannot look up sweep " + id);
  return NoSuchSweep(db, id);
}

Result<JobShapes> KnownJobs(const SqliteDb& db, const std::string& sweep_id, int64_t* max_seq) {
  struct Row {
    std::string key;
    JobShape shape;
    int64_t seq;
  };
  Result<std::vector<Row>> rows = SelectRows<Row>(
      db, "SELECT job_key, kind, array_size, seq FROM jobs WHERE sweep_id = ?1",
      "cannot read the jobs of sweep " + sweep_id,
      [](const SqlStatement& s) -> Result<Row> {
        Row r{s.Text(0), JobShape{JobKind::kArray, s.Int(2)}, s.Int(3)};
        ParseJobKind(s.Text(1), r.shape.kind);
        return r;
      },
      sweep_id);
  if (!rows) return rows.error();
  JobShapes out;
  if (max_seq) *max_seq = -1;
  for (const Row& r : rows.value()) {
    out.emplace(r.key, r.shape);
    if (max_seq && r.seq > *max_seq) *max_seq = r.seq;
  }
  return out;
}

Result<JobRecord> LoadJob(const SqliteDb& db, const std::string& sweep_id, const std::string& key) {
  SqlStatement s(db, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE sweep_id = ?1 AND job_key = ?2");
  if (!s.ok()) return db.Fail("cannot read job '" + key + "' of sweep " + sweep_id);
  s.BindAll(sweep_id, key);
  const SqlStatement::StepResult rc = s.Step();
  if (rc == SqlStatement::kRow) return ReadJob(db, s);
  if (rc != SqlStatement::kDone) return db.Fail("cannot read job '" + key + "' of sweep " + sweep_id);
  if (Status exists = CheckSweepExists(db, sweep_id); !exists) return exists.error();
  Result<JobShapes> known = KnownJobs(db, sweep_id, nullptr);
  std::string keys;
  if (known) {
    for (const auto& [k, shape] : known.value()) keys += (keys.empty() ? "" : ", ") + k;
  }
  return db.Plain("sweep " + sweep_id + " has no job '" + key + "' (its jobs: " + (keys.empty() ? "none" : keys) + ")");
}

std::string JobWhere(const std::string& sweep_id, const std::string& key) {
  return "job '" + key + "' of sweep " + sweep_id;
}

}  // namespace ix
