#include "submitter/sweep/sweep_store.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <random>

#include "core/process/process.h"

namespace ix {
namespace {

constexpr int kBusyTimeoutMs = 5000;

// The schema of version 1. Foreign keys between jobs and entries are
// deferred so one transaction may insert them in any order.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE sweeps (
  id          TEXT PRIMARY KEY,
  mode        TEXT NOT NULL,
  created_at  REAL NOT NULL,
  updated_at  REAL NOT NULL,
  sweep_dir   TEXT NOT NULL,
  argv        TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('submitting','running','succeeded','failed','cancelled'))
);
CREATE INDEX sweeps_by_time ON sweeps (created_at);
CREATE TABLE jobs (
  sweep_id        TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  job_key         TEXT NOT NULL,
  seq             INTEGER NOT NULL,
  kind            TEXT NOT NULL CHECK (kind IN ('canary','array')),
  job_name        TEXT NOT NULL,
  script_path     TEXT NOT NULL,
  slurm_job_id    INTEGER,
  array_size      INTEGER NOT NULL CHECK (array_size >= 1),
  throttle        INTEGER NOT NULL CHECK (throttle >= 0),
  depends_on      TEXT,
  state           TEXT NOT NULL CHECK (state IN ('planned','submitting','submitted','cancelled','finished')),
  submit_token    TEXT,
  submit_attempts INTEGER NOT NULL DEFAULT 0,
  submitting_at   REAL,
  submitted_at    REAL,
  PRIMARY KEY (sweep_id, job_key),
  UNIQUE (sweep_id, seq),
  FOREIGN KEY (sweep_id, depends_on) REFERENCES jobs (sweep_id, job_key) DEFERRABLE INITIALLY DEFERRED
);
CREATE TABLE entries (
  sweep_id        TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  entry_index     INTEGER NOT NULL,
  job_key         TEXT NOT NULL,
  array_index     INTEGER,
  bucket          TEXT NOT NULL,
  config_key      TEXT NOT NULL,
  arm             TEXT NOT NULL,
  recipe          TEXT NOT NULL,
  conc            INTEGER NOT NULL,
  entry_json      TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('pending','running','succeeded','failed','cancelled','skipped')),
  slurm_task_id   TEXT,
  started_at      REAL,
  ended_at        REAL,
  exit_code       INTEGER,
  failure_reason  TEXT,
  failure_process TEXT,
  result_path     TEXT,
  updated_at      REAL NOT NULL,
  PRIMARY KEY (sweep_id, entry_index),
  UNIQUE (sweep_id, job_key, array_index),
  FOREIGN KEY (sweep_id, job_key) REFERENCES jobs (sweep_id, job_key) DEFERRABLE INITIALLY DEFERRED
);
)sql";

double NowSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// A prepared statement, finalized when it goes out of scope. Binding
// indexes are 1-based, column indexes 0-based, as in SQLite.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return rc_ == SQLITE_OK; }

  void Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void Bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, const char* v) { sqlite3_bind_text(s_, i, v, -1, SQLITE_TRANSIENT); }
  void BindNull(int i) { sqlite3_bind_null(s_, i); }
  template <class T>
  void Bind(int i, const std::optional<T>& v) {
    if (v) {
      Bind(i, *v);
    } else {
      BindNull(i);
    }
  }
  // The text or NULL when empty.
  void BindOrNull(int i, const std::string& v) {
    if (v.empty()) {
      BindNull(i);
    } else {
      Bind(i, v);
    }
  }

  int Step() { return sqlite3_step(s_); }
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  bool IsNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int64_t Int(int c) const { return sqlite3_column_int64(s_, c); }
  double Real(int c) const { return sqlite3_column_double(s_, c); }
  std::string Text(int c) const {
    const unsigned char* t = sqlite3_column_text(s_, c);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, c)))
             : std::string();
  }
  std::optional<int64_t> OptInt(int c) const { return IsNull(c) ? std::nullopt : std::optional<int64_t>(Int(c)); }
  std::optional<double> OptReal(int c) const { return IsNull(c) ? std::nullopt : std::optional<double>(Real(c)); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_OK;
};

// The connection with the path that names it in every error.
struct Conn {
  sqlite3* db;
  const std::string& path;

  Error Fail(const std::string& what) const { return Error{path + ": " + what + ": " + sqlite3_errmsg(db)}; }
  Error Plain(const std::string& what) const { return Error{path + ": " + what}; }

  Status Exec(const char* sql, const std::string& what) const {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return Fail(what);
    return Ok{};
  }

  // Runs `fn` in BEGIN IMMEDIATE ... COMMIT: the write lock is taken (waiting
  // up to the busy timeout) before anything is read, so a concurrent writer
  // can never make this transaction's read-then-write fail with
  // SQLITE_BUSY. Any error rolls everything back.
  template <class T, class Fn>
  Result<T> Write(const std::string& what, Fn&& fn) const {
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Fail("cannot start a transaction to " + what);
    }
    Result<T> r = fn();
    if (r.ok() && sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error e = Fail("cannot commit " + what);
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return e;
    }
    if (!r.ok()) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return r;
  }

  // A read transaction, so several SELECTs see one snapshot.
  template <class T, class Fn>
  Result<T> Read(const std::string& what, Fn&& fn) const {
    if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Fail("cannot start a transaction to " + what);
    }
    Result<T> r = fn();
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    return r;
  }
};

// ---- names of states ----------------------------------------------------------

template <class E, size_t N>
bool ParseName(const char* const (&names)[N], const std::string& s, E& out) {
  for (size_t i = 0; i < N; ++i) {
    if (s == names[i]) {
      out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

constexpr const char* kSweepStates[] = {"submitting", "running", "succeeded", "failed", "cancelled"};
constexpr const char* kJobStates[] = {"planned", "submitting", "submitted", "cancelled", "finished"};
constexpr const char* kEntryStates[] = {"pending", "running", "succeeded", "failed", "cancelled", "skipped"};
constexpr const char* kJobKinds[] = {"canary", "array"};

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

// ---- rows -------------------------------------------------------------------------

constexpr const char* kSweepColumns = "id, mode, created_at, updated_at, sweep_dir, argv, state";

Result<SweepRecord> ReadSweep(const Conn& c, const Stmt& s) {
  SweepRecord r;
  r.id = s.Text(0);
  Result<SweepMode> mode = ParseSweepMode(s.Text(1));
  if (!mode) return c.Plain("sweep " + r.id + ": damaged row: " + mode.error().message);
  r.mode = mode.value();
  r.created_at = s.Real(2);
  r.updated_at = s.Real(3);
  r.sweep_dir = s.Text(4);
  if (!ArgvFromJson(s.Text(5), r.argv)) return c.Plain("sweep " + r.id + ": damaged row: argv is not a JSON string array");
  if (!ParseName(kSweepStates, s.Text(6), r.state)) return c.Plain("sweep " + r.id + ": damaged row: state '" + s.Text(6) + "'");
  return r;
}

constexpr const char* kJobColumns =
    "sweep_id, job_key, seq, kind, job_name, script_path, slurm_job_id, array_size, throttle, depends_on, state, "
    "submit_token, submit_attempts, submitting_at, submitted_at";

Result<JobRecord> ReadJob(const Conn& c, const Stmt& s) {
  JobRecord j;
  j.sweep_id = s.Text(0);
  j.key = s.Text(1);
  j.seq = s.Int(2);
  if (!ParseName(kJobKinds, s.Text(3), j.kind)) return c.Plain("job " + j.key + ": damaged row: kind '" + s.Text(3) + "'");
  j.job_name = s.Text(4);
  j.script_path = s.Text(5);
  j.slurm_job_id = s.OptInt(6);
  j.array_size = s.Int(7);
  j.throttle = s.Int(8);
  j.depends_on = s.Text(9);
  if (!ParseName(kJobStates, s.Text(10), j.state)) return c.Plain("job " + j.key + ": damaged row: state '" + s.Text(10) + "'");
  j.submit_token = s.Text(11);
  j.submit_attempts = s.Int(12);
  j.submitting_at = s.OptReal(13);
  j.submitted_at = s.OptReal(14);
  return j;
}

constexpr const char* kEntryColumns =
    "sweep_id, entry_index, job_key, array_index, bucket, config_key, arm, recipe, conc, entry_json, state, "
    "slurm_task_id, started_at, ended_at, exit_code, failure_reason, failure_process, result_path, updated_at";

Result<EntryRecord> ReadEntry(const Conn& c, const Stmt& s) {
  EntryRecord e;
  e.sweep_id = s.Text(0);
  e.index = s.Int(1);
  e.job_key = s.Text(2);
  e.array_index = s.OptInt(3);
  e.bucket = s.Text(4);
  e.config_key = s.Text(5);
  e.arm = s.Text(6);
  e.recipe = s.Text(7);
  e.conc = s.Int(8);
  e.entry_json = s.Text(9);
  if (!ParseName(kEntryStates, s.Text(10), e.state)) {
    return c.Plain("entry " + std::to_string(e.index) + ": damaged row: state '" + s.Text(10) + "'");
  }
  e.slurm_task_id = s.Text(11);
  e.started_at = s.OptReal(12);
  e.ended_at = s.OptReal(13);
  e.exit_code = s.OptInt(14);
  e.failure_reason = s.Text(15);
  e.failure_process = s.Text(16);
  e.result_path = s.Text(17);
  e.updated_at = s.Real(18);
  return e;
}

// ---- checks ---------------------------------------------------------------------

bool IsIdToken(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                    ch == '_' || ch == '.';
    if (!ok) return false;
  }
  return true;
}

// What the checks of new entries need to know about a job.
struct JobShape {
  JobKind kind;
  int64_t array_size;
};

Status CheckJobs(const std::vector<NewJob>& jobs, std::map<std::string, JobShape>& known) {
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

Status CheckEntries(const std::vector<NewEntry>& entries, const std::map<std::string, JobShape>& jobs) {
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

// ---- writes inside a transaction -------------------------------------------------

Status InsertJobs(const Conn& c, const std::string& sweep_id, const std::vector<NewJob>& jobs, int64_t first_seq) {
  Stmt s(c.db,
         "INSERT INTO jobs (sweep_id, job_key, seq, kind, job_name, script_path, array_size, throttle, depends_on, "
         "state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'planned')");
  if (!s.ok()) return c.Fail("cannot prepare to add jobs");
  int64_t seq = first_seq;
  for (const NewJob& j : jobs) {
    s.Reset();
    s.Bind(1, sweep_id);
    s.Bind(2, j.key);
    s.Bind(3, seq++);
    s.Bind(4, JobKindName(j.kind));
    s.Bind(5, j.job_name);
    s.Bind(6, j.script_path);
    s.Bind(7, j.array_size);
    s.Bind(8, j.throttle);
    s.BindOrNull(9, j.depends_on);
    if (s.Step() != SQLITE_DONE) return c.Fail("cannot add job '" + j.key + "' to sweep " + sweep_id);
  }
  return Ok{};
}

Status InsertEntries(const Conn& c, const std::string& sweep_id, const std::vector<NewEntry>& entries, double now) {
  Stmt s(c.db,
         "INSERT INTO entries (sweep_id, entry_index, job_key, array_index, bucket, config_key, arm, recipe, conc, "
         "entry_json, state, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11)");
  if (!s.ok()) return c.Fail("cannot prepare to add entries");
  for (const NewEntry& e : entries) {
    s.Reset();
    s.Bind(1, sweep_id);
    s.Bind(2, e.index);
    s.Bind(3, e.job_key);
    s.Bind(4, e.array_index);
    s.Bind(5, e.bucket);
    s.Bind(6, e.config_key);
    s.Bind(7, e.arm);
    s.Bind(8, e.recipe);
    s.Bind(9, e.conc);
    s.Bind(10, e.entry_json);
    s.Bind(11, now);
    if (s.Step() != SQLITE_DONE) {
      return c.Fail("cannot add entry " + std::to_string(e.index) + " (job '" + e.job_key + "') to sweep " + sweep_id);
    }
  }
  return Ok{};
}

Result<std::vector<std::string>> RecentIds(const Conn& c, int limit) {
  Stmt s(c.db, "SELECT id FROM sweeps ORDER BY created_at DESC, id DESC LIMIT ?1");
  if (!s.ok()) return c.Fail("cannot list sweeps");
  s.Bind(1, static_cast<int64_t>(limit));
  std::vector<std::string> ids;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) ids.push_back(s.Text(0));
  if (rc != SQLITE_DONE) return c.Fail("cannot list sweeps");
  return ids;
}

// The error for a sweep id that is not in the database.
Error NoSuchSweep(const Conn& c, const std::string& id) {
  Result<std::vector<std::string>> recent = RecentIds(c, 5);
  std::string msg = "no sweep '" + id + "'";
  if (!recent || recent.value().empty()) {
    msg += "; no sweeps are recorded here yet";
  } else {
    msg += "; the most recent are: ";
    for (size_t i = 0; i < recent.value().size(); ++i) msg += (i ? ", " : "") + recent.value()[i];
    msg += " (`ixsubmit status` lists them all)";
  }
  return c.Plain(msg);
}

Status CheckSweepExists(const Conn& c, const std::string& id) {
  Stmt s(c.db, "SELECT 1 FROM sweeps WHERE id = ?1");
  if (!s.ok()) return c.Fail("cannot look up sweep " + id);
  s.Bind(1, id);
  const int rc = s.Step();
  if (rc == SQLITE_ROW) return Ok{};
  if (rc != SQLITE_DONE) return c.Fail("cannot look up sweep " + id);
  return NoSuchSweep(c, id);
}

Result<std::map<std::string, JobShape>> KnownJobs(const Conn& c, const std::string& sweep_id, int64_t* max_seq) {
  Stmt s(c.db, "SELECT job_key, kind, array_size, seq FROM jobs WHERE sweep_id = ?1");
  if (!s.ok()) return c.Fail("cannot read the jobs of sweep " + sweep_id);
  s.Bind(1, sweep_id);
  std::map<std::string, JobShape> out;
  if (max_seq) *max_seq = -1;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    JobShape shape{JobKind::kArray, s.Int(2)};
    ParseName(kJobKinds, s.Text(1), shape.kind);
    out.emplace(s.Text(0), shape);
    if (max_seq && s.Int(3) > *max_seq) *max_seq = s.Int(3);
  }
  if (rc != SQLITE_DONE) return c.Fail("cannot read the jobs of sweep " + sweep_id);
  return out;
}

Result<JobRecord> LoadJob(const Conn& c, const std::string& sweep_id, const std::string& key) {
  const std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE sweep_id = ?1 AND job_key = ?2";
  Stmt s(c.db, sql.c_str());
  if (!s.ok()) return c.Fail("cannot read job '" + key + "' of sweep " + sweep_id);
  s.Bind(1, sweep_id);
  s.Bind(2, key);
  const int rc = s.Step();
  if (rc == SQLITE_ROW) return ReadJob(c, s);
  if (rc != SQLITE_DONE) return c.Fail("cannot read job '" + key + "' of sweep " + sweep_id);
  if (Status exists = CheckSweepExists(c, sweep_id); !exists) return exists.error();
  Result<std::map<std::string, JobShape>> known = KnownJobs(c, sweep_id, nullptr);
  std::string keys;
  if (known) {
    for (const auto& [k, shape] : known.value()) keys += (keys.empty() ? "" : ", ") + k;
  }
  return c.Plain("sweep " + sweep_id + " has no job '" + key + "' (its jobs: " + (keys.empty() ? "none" : keys) + ")");
}

std::string JobWhere(const std::string& sweep_id, const std::string& key) {
  return "job '" + key + "' of sweep " + sweep_id;
}

// Creates the directories above `path` that are missing, 0700: the
// database holds the user's command lines and results.
Status MakeParents(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Error{path + ": cannot create directory " + dir + ": " + std::strerror(errno)};
    }
  }
  return Ok{};
}

Result<int> UserVersion(const Conn& c) {
  Stmt s(c.db, "PRAGMA user_version");
  if (!s.ok() || s.Step() != SQLITE_ROW) return c.Fail("cannot read the schema version");
  return static_cast<int>(s.Int(0));
}

// Makes or checks the schema, in one write transaction so two processes
// opening a new database at once do not both create it.
Status Migrate(const Conn& c) {
  Result<Ok> r = c.Write<Ok>("create the schema", [&]() -> Status {
    Result<int> version = UserVersion(c);
    if (!version) return version.error();
    if (version.value() > kSweepStoreSchemaVersion) {
      return c.Plain("the database has schema version " + std::to_string(version.value()) +
                     ", newer than this build understands (" + std::to_string(kSweepStoreSchemaVersion) +
                     "); use a newer ixsubmit, or another --db");
    }
    if (version.value() == kSweepStoreSchemaVersion) return Ok{};
    Stmt tables(c.db, "SELECT count(*) FROM sqlite_master");
    if (!tables.ok() || tables.Step() != SQLITE_ROW) return c.Fail("cannot read the schema");
    if (tables.Int(0) != 0) {
      return c.Plain("an SQLite database, but not an inferencex one (it has tables and no schema version); "
                     "pass another --db");
    }
    if (Status s = c.Exec(kSchemaV1, "cannot create the schema"); !s) return s;
    const std::string set = "PRAGMA user_version = " + std::to_string(kSweepStoreSchemaVersion);
    return c.Exec(set.c_str(), "cannot set the schema version");
  });
  if (!r) return r.error();
  return Ok{};
}

std::string MakeSweepId(double now) {
  const std::time_t t = static_cast<std::time_t>(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  // random_device on every call: forked processes must not share a sequence.
  std::random_device rng;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(rng() & 0xffff));
  return std::string("sw-") + stamp + "-" + suffix;
}

}  // namespace

// ---- free functions -----------------------------------------------------------------

Result<std::string> DefaultDbPath(const std::vector<std::string>& env) {
  const std::optional<std::string> xdg = FindEnv(env, "XDG_STATE_HOME");
  if (xdg && !xdg->empty() && (*xdg)[0] == '/') return *xdg + "/inferencex/ix.db";
  const std::optional<std::string> home = FindEnv(env, "HOME");
  if (home && !home->empty() && (*home)[0] == '/') {
    const std::string base = home->back() == '/' ? home->substr(0, home->size() - 1) : *home;
    return base + "/.local/state/inferencex/ix.db";
  }
  return Error{"cannot choose where the sweep database goes: neither XDG_STATE_HOME nor HOME is an absolute path; "
               "pass --db PATH"};
}

std::optional<std::string> LegacyDbPath(const std::vector<std::string>& env) {
  const std::optional<std::string> xdg = FindEnv(env, "XDG_DATA_HOME");
  if (xdg && !xdg->empty() && (*xdg)[0] == '/') return *xdg + "/inferencex/ix.db";
  const std::optional<std::string> home = FindEnv(env, "HOME");
  if (home && !home->empty() && (*home)[0] == '/') {
    const std::string base = home->back() == '/' ? home->substr(0, home->size() - 1) : *home;
    return base + "/.local/share/inferencex/ix.db";
  }
  return std::nullopt;
}

const char* StateName(SweepState s) { return kSweepStates[static_cast<size_t>(s)]; }
const char* StateName(JobState s) { return kJobStates[static_cast<size_t>(s)]; }
const char* StateName(EntryState s) { return kEntryStates[static_cast<size_t>(s)]; }
const char* JobKindName(JobKind k) { return kJobKinds[static_cast<size_t>(k)]; }

bool IsFinal(EntryState s) {
  return s == EntryState::kSucceeded || s == EntryState::kFailed || s == EntryState::kCancelled ||
         s == EntryState::kSkipped;
}

const JobRecord* LoadedSweep::FindJob(std::string_view key) const {
  for (const JobRecord& j : jobs) {
    if (j.key == key) return &j;
  }
  return nullptr;
}

// ---- the store ------------------------------------------------------------------------

Result<SweepStore> SweepStore::Open(const std::string& path) {
  if (path.empty()) return Error{"the sweep database path is empty"};
  if (Status s = MakeParents(path); !s) return s.error();
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    Error e{path + ": cannot open the sweep database: " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))};
    sqlite3_close(db);
    return e;
  }
  SweepStore store(path, db);  // closes db on every return below
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  const Conn c{db, store.path_};

  // The first read of the file: a file that is not a database fails here,
  // before any pragma that could write to it.
  Result<int> version = UserVersion(c);
  if (!version) {
    const int err = sqlite3_errcode(db) & 0xff;
    if (err == SQLITE_NOTADB || err == SQLITE_CORRUPT) {
      return Error{path + ": not an SQLite database, or a damaged one (" + sqlite3_errmsg(db) +
                   "); it was left as it is: move it aside or pass another --db"};
    }
    return version.error();
  }
  if (version.value() > kSweepStoreSchemaVersion) {
    return c.Plain("the database has schema version " + std::to_string(version.value()) +
                   ", newer than this build understands (" + std::to_string(kSweepStoreSchemaVersion) +
                   "); use a newer ixsubmit, or another --db");
  }
  {
    Stmt wal(db, "PRAGMA journal_mode = WAL");
    if (!wal.ok() || wal.Step() != SQLITE_ROW) return c.Fail("cannot switch to WAL journaling");
    if (wal.Text(0) != "wal") {
      return c.Plain("cannot use WAL journaling here (journal mode stays '" + wal.Text(0) +
                     "'); put the database on a local file system");
    }
  }
  if (Status s = c.Exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys"); !s) return s.error();
  if (Status s = c.Exec("PRAGMA synchronous = FULL", "cannot set synchronous mode"); !s) return s.error();
  if (Status s = Migrate(c); !s) return s.error();
  return store;
}

SweepStore::SweepStore(SweepStore&& other) noexcept : path_(std::move(other.path_)), db_(other.db_) {
  other.db_ = nullptr;
}

SweepStore& SweepStore::operator=(SweepStore&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    path_ = std::move(other.path_);
    db_ = other.db_;
    other.db_ = nullptr;
  }
  return *this;
}

SweepStore::~SweepStore() { sqlite3_close(db_); }

Result<std::string> SweepStore::CreateSweep(const NewSweep& sweep) {
  const Conn c{db_, path_};
  if (!sweep.id.empty() && !IsIdToken(sweep.id)) {
    return c.Plain("sweep id '" + sweep.id + "': use letters, digits, '-', '_' and '.'");
  }
  std::map<std::string, JobShape> known;
  if (Status s = CheckJobs(sweep.jobs, known); !s) return c.Plain("new sweep: " + s.error().message);
  if (Status s = CheckEntries(sweep.entries, known); !s) return c.Plain("new sweep: " + s.error().message);

  // A made-up id can collide with one made in the same second: try another.
  for (int attempt = 0;; ++attempt) {
    const double now = NowSeconds();
    const std::string id = sweep.id.empty() ? MakeSweepId(now) : sweep.id;
    bool collided = false;
    Result<std::string> r = c.Write<std::string>("create sweep " + id, [&]() -> Result<std::string> {
      Stmt s(db_,
             "INSERT INTO sweeps (id, mode, created_at, updated_at, sweep_dir, argv, state) "
             "VALUES (?1, ?2, ?3, ?3, ?4, ?5, 'submitting')");
      if (!s.ok()) return c.Fail("cannot prepare to create a sweep");
      s.Bind(1, id);
      s.Bind(2, SweepModeName(sweep.mode));
      s.Bind(3, now);
      s.Bind(4, sweep.sweep_dir);
      s.Bind(5, ArgvToJson(sweep.argv));
      if (s.Step() != SQLITE_DONE) {
        collided = sqlite3_extended_errcode(db_) == SQLITE_CONSTRAINT_PRIMARYKEY;
        return c.Fail("cannot create sweep " + id);
      }
      if (Status st = InsertJobs(c, id, sweep.jobs, 0); !st) return st.error();
      if (Status st = InsertEntries(c, id, sweep.entries, now); !st) return st.error();
      return id;
    });
    if (r || !collided || !sweep.id.empty() || attempt >= 8) return r;
  }
}

Status SweepStore::AddJobs(const std::string& sweep_id, const std::vector<NewJob>& jobs) {
  const Conn c{db_, path_};
  return c.Write<Ok>("add jobs to sweep " + sweep_id, [&]() -> Status {
    if (Status s = CheckSweepExists(c, sweep_id); !s) return s;
    int64_t max_seq = -1;
    Result<std::map<std::string, JobShape>> known = KnownJobs(c, sweep_id, &max_seq);
    if (!known) return known.error();
    if (Status s = CheckJobs(jobs, known.value()); !s) return c.Plain("sweep " + sweep_id + ": " + s.error().message);
    return InsertJobs(c, sweep_id, jobs, max_seq + 1);
  });
}

Status SweepStore::AddEntries(const std::string& sweep_id, const std::vector<NewEntry>& entries) {
  const Conn c{db_, path_};
  return c.Write<Ok>("add entries to sweep " + sweep_id, [&]() -> Status {
    if (Status s = CheckSweepExists(c, sweep_id); !s) return s;
    Result<std::map<std::string, JobShape>> known = KnownJobs(c, sweep_id, nullptr);
    if (!known) return known.error();
    if (Status s = CheckEntries(entries, known.value()); !s) return c.Plain("sweep " + sweep_id + ": " + s.error().message);
    return InsertEntries(c, sweep_id, entries, NowSeconds());
  });
}

Status SweepStore::SetSweepState(const std::string& sweep_id, SweepState state) {
  const Conn c{db_, path_};
  return c.Write<Ok>("set the state of sweep " + sweep_id, [&]() -> Status {
    Stmt s(db_, "UPDATE sweeps SET state = ?2, updated_at = ?3 WHERE id = ?1");
    if (!s.ok()) return c.Fail("cannot prepare to set a sweep state");
    s.Bind(1, sweep_id);
    s.Bind(2, StateName(state));
    s.Bind(3, NowSeconds());
    if (s.Step() != SQLITE_DONE) return c.Fail("cannot set the state of sweep " + sweep_id);
    if (sqlite3_changes(db_) == 0) return NoSuchSweep(c, sweep_id);
    return Ok{};
  });
}

Result<std::vector<SweepSummary>> SweepStore::ListSweeps() {
  const Conn c{db_, path_};
  const std::string sql =
      "SELECT s.id, s.mode, s.created_at, s.updated_at, s.sweep_dir, s.argv, s.state, "
      "COALESCE(SUM(e.state = 'pending'), 0), COALESCE(SUM(e.state = 'running'), 0), "
      "COALESCE(SUM(e.state = 'succeeded'), 0), COALESCE(SUM(e.state = 'failed'), 0), "
      "COALESCE(SUM(e.state = 'cancelled'), 0), COALESCE(SUM(e.state = 'skipped'), 0) "
      "FROM sweeps s LEFT JOIN entries e ON e.sweep_id = s.id "
      "GROUP BY s.id ORDER BY s.created_at DESC, s.id DESC";
  Stmt s(db_, sql.c_str());
  if (!s.ok()) return c.Fail("cannot list sweeps");
  std::vector<SweepSummary> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    Result<SweepRecord> sw = ReadSweep(c, s);
    if (!sw) return sw.error();
    SweepSummary sum{std::move(sw.value()), {}};
    sum.counts = {s.Int(7), s.Int(8), s.Int(9), s.Int(10), s.Int(11), s.Int(12)};
    out.push_back(std::move(sum));
  }
  if (rc != SQLITE_DONE) return c.Fail("cannot list sweeps");
  return out;
}

Result<LoadedSweep> SweepStore::LoadSweep(const std::string& sweep_id) {
  const Conn c{db_, path_};
  return c.Read<LoadedSweep>("load sweep " + sweep_id, [&]() -> Result<LoadedSweep> {
    LoadedSweep out;
    {
      const std::string sql = std::string("SELECT ") + kSweepColumns + " FROM sweeps WHERE id = ?1";
      Stmt s(db_, sql.c_str());
      if (!s.ok()) return c.Fail("cannot load sweep " + sweep_id);
      s.Bind(1, sweep_id);
      const int rc = s.Step();
      if (rc == SQLITE_DONE) return NoSuchSweep(c, sweep_id);
      if (rc != SQLITE_ROW) return c.Fail("cannot load sweep " + sweep_id);
      Result<SweepRecord> sw = ReadSweep(c, s);
      if (!sw) return sw.error();
      out.sweep = std::move(sw.value());
    }
    {
      const std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE sweep_id = ?1 ORDER BY seq";
      Stmt s(db_, sql.c_str());
      if (!s.ok()) return c.Fail("cannot load the jobs of sweep " + sweep_id);
      s.Bind(1, sweep_id);
      int rc;
      while ((rc = s.Step()) == SQLITE_ROW) {
        Result<JobRecord> j = ReadJob(c, s);
        if (!j) return j.error();
        out.jobs.push_back(std::move(j.value()));
      }
      if (rc != SQLITE_DONE) return c.Fail("cannot load the jobs of sweep " + sweep_id);
    }
    {
      const std::string sql =
          std::string("SELECT ") + kEntryColumns + " FROM entries WHERE sweep_id = ?1 ORDER BY entry_index";
      Stmt s(db_, sql.c_str());
      if (!s.ok()) return c.Fail("cannot load the entries of sweep " + sweep_id);
      s.Bind(1, sweep_id);
      int rc;
      while ((rc = s.Step()) == SQLITE_ROW) {
        Result<EntryRecord> e = ReadEntry(c, s);
        if (!e) return e.error();
        out.entries.push_back(std::move(e.value()));
      }
      if (rc != SQLITE_DONE) return c.Fail("cannot load the entries of sweep " + sweep_id);
    }
    return out;
  });
}

Result<std::string> SweepStore::LatestSweepId() {
  const Conn c{db_, path_};
  Result<std::vector<std::string>> ids = RecentIds(c, 1);
  if (!ids) return ids.error();
  if (ids.value().empty()) return c.Plain("no sweeps are recorded here yet");
  return ids.value().front();
}

Result<JobRecord> SweepStore::MarkSubmitting(const std::string& sweep_id, const std::string& job_key) {
  const Conn c{db_, path_};
  const std::string where = JobWhere(sweep_id, job_key);
  return c.Write<JobRecord>("mark " + where + " as submitting", [&]() -> Result<JobRecord> {
    Result<JobRecord> job = LoadJob(c, sweep_id, job_key);
    if (!job) return job.error();
    JobRecord& j = job.value();
    switch (j.state) {
      case JobState::kPlanned: break;
      case JobState::kSubmitting:
        return c.Plain(where + " is already being submitted (attempt " + std::to_string(j.submit_attempts) +
                       ", token " + j.submit_token + "): look it up by its job name '" + j.job_name +
                       "' first, then MarkSubmitted or AbandonSubmission");
      case JobState::kSubmitted:
        return c.Plain(where + " is already submitted as Slurm job " + std::to_string(j.slurm_job_id.value_or(0)) +
                       "; refusing to submit it twice");
      default: return c.Plain(where + " is " + StateName(j.state) + "; it cannot be submitted");
    }
    if (!j.depends_on.empty()) {
      Result<JobRecord> dep = LoadJob(c, sweep_id, j.depends_on);
      if (!dep) return dep.error();
      if (!dep.value().slurm_job_id) {
        return c.Plain(where + " depends on job '" + j.depends_on + "', which has no Slurm job id yet (" +
                       StateName(dep.value().state) + ")");
      }
    }
    j.state = JobState::kSubmitting;
    j.submit_attempts += 1;
    j.submit_token = sweep_id + "/" + job_key + "/" + std::to_string(j.submit_attempts);
    j.submitting_at = NowSeconds();
    Stmt s(db_,
           "UPDATE jobs SET state = 'submitting', submit_attempts = ?3, submit_token = ?4, submitting_at = ?5 "
           "WHERE sweep_id = ?1 AND job_key = ?2");
    if (!s.ok()) return c.Fail("cannot prepare to mark a job");
    s.Bind(1, sweep_id);
    s.Bind(2, job_key);
    s.Bind(3, j.submit_attempts);
    s.Bind(4, j.submit_token);
    s.Bind(5, *j.submitting_at);
    if (s.Step() != SQLITE_DONE) return c.Fail("cannot mark " + where + " as submitting");
    return j;
  });
}

Status SweepStore::MarkSubmitted(const std::string& sweep_id, const std::string& job_key, int64_t slurm_job_id) {
  const Conn c{db_, path_};
  const std::string where = JobWhere(sweep_id, job_key);
  if (slurm_job_id <= 0) return c.Plain(where + ": Slurm job id " + std::to_string(slurm_job_id) + " is not valid");
  return c.Write<Ok>("mark " + where + " as submitted", [&]() -> Status {
    Result<JobRecord> job = LoadJob(c, sweep_id, job_key);
    if (!job) return job.error();
    const JobRecord& j = job.value();
    if (j.state == JobState::kSubmitted || (j.slurm_job_id && j.state != JobState::kSubmitting)) {
      if (j.slurm_job_id == slurm_job_id) return Ok{};
      return c.Plain(where + " is already recorded as Slurm job " + std::to_string(j.slurm_job_id.value_or(0)) +
                     ", not " + std::to_string(slurm_job_id));
    }
    if (j.state != JobState::kSubmitting) {
      return c.Plain(where + " is " + StateName(j.state) + ", not submitting: call MarkSubmitting before sbatch");
    }
    const double now = NowSeconds();
    Stmt s(db_,
           "UPDATE jobs SET state = 'submitted', slurm_job_id = ?3, submitted_at = ?4 "
           "WHERE sweep_id = ?1 AND job_key = ?2");
    if (!s.ok()) return c.Fail("cannot prepare to mark a job");
    s.Bind(1, sweep_id);
    s.Bind(2, job_key);
    s.Bind(3, slurm_job_id);
    s.Bind(4, now);
    if (s.Step() != SQLITE_DONE) return c.Fail("cannot mark " + where + " as submitted");
    Stmt e(db_,
           "UPDATE entries SET slurm_task_id = CASE WHEN array_index IS NULL THEN ?3 ELSE ?3 || '_' || array_index END, "
           "updated_at = ?4 WHERE sweep_id = ?1 AND job_key = ?2");
    if (!e.ok()) return c.Fail("cannot prepare to record task ids");
    e.Bind(1, sweep_id);
    e.Bind(2, job_key);
    e.Bind(3, std::to_string(slurm_job_id));
    e.Bind(4, now);
    if (e.Step() != SQLITE_DONE) return c.Fail("cannot record the task ids of " + where);
    return Ok{};
  });
}

Status SweepStore::AbandonSubmission(const std::string& sweep_id, const std::string& job_key) {
  const Conn c{db_, path_};
  const std::string where = JobWhere(sweep_id, job_key);
  return c.Write<Ok>("abandon the submission of " + where, [&]() -> Status {
    Result<JobRecord> job = LoadJob(c, sweep_id, job_key);
    if (!job) return job.error();
    if (job.value().state != JobState::kSubmitting) {
      return c.Plain(where + " is " + StateName(job.value().state) + ", not submitting; nothing to abandon");
    }
    Stmt s(db_, "UPDATE jobs SET state = 'planned' WHERE sweep_id = ?1 AND job_key = ?2");
    if (!s.ok()) return c.Fail("cannot prepare to mark a job");
    s.Bind(1, sweep_id);
    s.Bind(2, job_key);
    if (s.Step() != SQLITE_DONE) return c.Fail("cannot abandon the submission of " + where);
    return Ok{};
  });
}

Result<std::vector<JobRecord>> SweepStore::JobsNeedingSubmission(const std::string& sweep_id) {
  const Conn c{db_, path_};
  return c.Read<std::vector<JobRecord>>("read the jobs of sweep " + sweep_id, [&]() -> Result<std::vector<JobRecord>> {
    if (Status s = CheckSweepExists(c, sweep_id); !s) return s.error();
    const std::string sql = std::string("SELECT ") + kJobColumns +
                            " FROM jobs WHERE sweep_id = ?1 AND state IN ('planned', 'submitting') ORDER BY seq";
    Stmt s(db_, sql.c_str());
    if (!s.ok()) return c.Fail("cannot read the jobs of sweep " + sweep_id);
    s.Bind(1, sweep_id);
    std::vector<JobRecord> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      Result<JobRecord> j = ReadJob(c, s);
      if (!j) return j.error();
      out.push_back(std::move(j.value()));
    }
    if (rc != SQLITE_DONE) return c.Fail("cannot read the jobs of sweep " + sweep_id);
    return out;
  });
}

Result<int64_t> SweepStore::MarkJobCancelled(const std::string& sweep_id, const std::string& job_key,
                                              const std::string& reason) {
  const Conn c{db_, path_};
  const std::string where = JobWhere(sweep_id, job_key);
  return c.Write<int64_t>("cancel " + where, [&]() -> Result<int64_t> {
    Result<JobRecord> job = LoadJob(c, sweep_id, job_key);
    if (!job) return job.error();
    Stmt s(db_, "UPDATE jobs SET state = 'cancelled' WHERE sweep_id = ?1 AND job_key = ?2");
    if (!s.ok()) return c.Fail("cannot prepare to cancel a job");
    s.Bind(1, sweep_id);
    s.Bind(2, job_key);
    if (s.Step() != SQLITE_DONE) return c.Fail("cannot cancel " + where);
    Stmt e(db_,
           "UPDATE entries SET state = 'cancelled', failure_reason = COALESCE(failure_reason, ?3), "
           "ended_at = COALESCE(ended_at, ?4), updated_at = ?4 "
           "WHERE sweep_id = ?1 AND job_key = ?2 AND state IN ('pending', 'running')");
    if (!e.ok()) return c.Fail("cannot prepare to cancel entries");
    e.Bind(1, sweep_id);
    e.Bind(2, job_key);
    e.BindOrNull(3, reason);
    e.Bind(4, NowSeconds());
    if (e.Step() != SQLITE_DONE) return c.Fail("cannot cancel the entries of " + where);
    return static_cast<int64_t>(sqlite3_changes(db_));
  });
}

Status SweepStore::SetJobState(const std::string& sweep_id, const std::string& job_key, JobState state) {
  const Conn c{db_, path_};
  const std::string where = JobWhere(sweep_id, job_key);
  if (state == JobState::kPlanned || state == JobState::kSubmitting || state == JobState::kSubmitted) {
    return c.Plain(where + ": a job becomes " + StateName(state) +
                   " only through MarkSubmitting, MarkSubmitted and AbandonSubmission");
  }
  return c.Write<Ok>("set the state of " + where, [&]() -> Status {
    Result<JobRecord> job = LoadJob(c, sweep_id, job_key);
    if (!job) return job.error();
    const JobState cur = job.value().state;
    if (cur == state) return Ok{};
    if (state == JobState::kFinished && cur != JobState::kSubmitted) {
      return c.Plain(where + " is " + StateName(cur) + "; only a submitted job can finish");
    }
    if (cur == JobState::kFinished) return c.Plain(where + " has finished; it cannot become " + StateName(state));
    Stmt s(db_, "UPDATE jobs SET state = ?3 WHERE sweep_id = ?1 AND job_key = ?2");
    if (!s.ok()) return c.Fail("cannot prepare to set a job state");
    s.Bind(1, sweep_id);
    s.Bind(2, job_key);
    s.Bind(3, StateName(state));
    if (s.Step() != SQLITE_DONE) return c.Fail("cannot set the state of " + where);
    return Ok{};
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
  const Conn c{db_, path_};
  return c.Write<int64_t>("update entries of sweep " + sweep_id, [&]() -> Result<int64_t> {
    Stmt get(db_, "SELECT state FROM entries WHERE sweep_id = ?1 AND entry_index = ?2");
    Stmt reopen(db_,
                "UPDATE entries SET ended_at = NULL, exit_code = NULL, failure_reason = NULL, failure_process = NULL "
                "WHERE sweep_id = ?1 AND entry_index = ?2");
    // Writes only when something differs, so a watcher repeating what it
    // saw costs a read, and sqlite3_changes says whether it changed.
    Stmt set(db_,
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
             "OR result_path IS NOT COALESCE(?10, result_path))");
    if (!get.ok() || !reopen.ok() || !set.ok()) return c.Fail("cannot prepare to update entries");
    const double now = NowSeconds();
    int64_t changed = 0;
    bool checked_sweep = false;
    for (const EntryUpdate& u : updates) {
      const std::string where = "sweep " + sweep_id + " entry " + std::to_string(u.index);
      get.Reset();
      get.Bind(1, sweep_id);
      get.Bind(2, u.index);
      const int rc = get.Step();
      if (rc == SQLITE_DONE) {
        if (!checked_sweep) {
          if (Status s = CheckSweepExists(c, sweep_id); !s) return s.error();
        }
        return c.Plain("sweep " + sweep_id + " has no entry " + std::to_string(u.index));
      }
      if (rc != SQLITE_ROW) return c.Fail("cannot read " + where);
      checked_sweep = true;
      EntryState cur = EntryState::kPending;
      if (!ParseName(kEntryStates, get.Text(0), cur)) return c.Plain(where + ": damaged row: state '" + get.Text(0) + "'");
      if (IsFinal(cur) && u.state != cur) {
        if (final_entries == FinalEntries::kKeep) continue;
        if (final_entries == FinalEntries::kRefuse) {
          return c.Plain(where + " is already " + StateName(cur) + "; refusing to make it " + StateName(u.state) +
                         " (a final state changes only when reopened explicitly)");
        }
        // What the old outcome recorded does not describe the new one.
        reopen.Reset();
        reopen.Bind(1, sweep_id);
        reopen.Bind(2, u.index);
        if (reopen.Step() != SQLITE_DONE) return c.Fail("cannot reopen " + where);
      }
      set.Reset();
      set.Bind(1, sweep_id);
      set.Bind(2, u.index);
      set.Bind(3, StateName(u.state));
      set.Bind(4, u.slurm_task_id);
      set.Bind(5, u.started_at);
      set.Bind(6, u.ended_at);
      set.Bind(7, u.exit_code);
      set.Bind(8, u.failure_reason);
      set.Bind(9, u.failure_process);
      set.Bind(10, u.result_path);
      set.Bind(11, now);
      if (set.Step() != SQLITE_DONE) return c.Fail("cannot update " + where);
      changed += sqlite3_changes(db_) > 0 ? 1 : 0;
    }
    return changed;
  });
}

}  // namespace ix
