#include "submitter/sweep/sweep_schema.h"

#include "core/base/paths.h"

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

// An error when `version` is newer than this build understands.
Status CheckNotNewer(const SqliteDb& db, int version) {
  if (version <= kSweepStoreSchemaVersion) return Ok{};
  return db.Plain("the database has schema version " + std::to_string(version) +
                  ", newer than this build understands (" + std::to_string(kSweepStoreSchemaVersion) +
                  "); use a newer ixsubmit, or another --db");
}

// The first read of the file, before any pragma that could write to it: a
// file that is not a database fails here and is left as it is.
Status CheckReadable(const SqliteDb& db) {
  Result<int> version = ReadSchemaVersion(db);
  if (!version) {
    if (db.LastErrorIsDamage()) {
      return Error{db.path() + ": not an SQLite database, or a damaged one (" + db.LastErrorMessage() +
                   "); it was left as it is: move it aside or pass another --db"};
    }
    return version.error();
  }
  return CheckNotNewer(db, version.value());
}

// WAL (readers never block the writer; it must stick, so a file system
// without shared memory is refused), foreign keys, synchronous=FULL.
Status ConfigureConnection(const SqliteDb& db) {
  {
    SqlStatement wal(db, "PRAGMA journal_mode = WAL");
    if (!wal.ok() || wal.Step() != SqlStatement::kRow) return db.Fail("cannot switch to WAL journaling");
    if (wal.Text(0) != "wal") {
      return db.Plain("cannot use WAL journaling here (journal mode stays '" + wal.Text(0) +
                      "'); put the database on a local file system");
    }
  }
  if (Status s = db.Exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys"); !s) return s;
  return db.Exec("PRAGMA synchronous = FULL", "cannot set synchronous mode");
}

}  // namespace

Result<SqliteDb> OpenSweepDatabase(const std::string& path) {
  if (path.empty()) return Error{"the sweep database path is empty"};
  if (Status s = MakeParentDirs(path, 0700); !s) return s.error();
  Result<SqliteDb> db = SqliteDb::Open(path, "the sweep database", kBusyTimeoutMs);
  if (!db) return db.error();
  if (Status s = CheckReadable(db.value()); !s) return s.error();
  if (Status s = ConfigureConnection(db.value()); !s) return s.error();
  if (Status s = MigrateSweepSchema(db.value()); !s) return s.error();
  return db;
}

Result<int> ReadSchemaVersion(const SqliteDb& db) {
  SqlStatement s(db, "PRAGMA user_version");
  if (!s.ok() || s.Step() != SqlStatement::kRow) return db.Fail("cannot read the schema version");
  return static_cast<int>(s.Int(0));
}

Status MigrateSweepSchema(const SqliteDb& db) {
  Result<Ok> r = db.Write<Ok>("create the schema", [&]() -> Status {
    Result<int> version = ReadSchemaVersion(db);
    if (!version) return version.error();
    if (Status s = CheckNotNewer(db, version.value()); !s) return s;
    if (version.value() == kSweepStoreSchemaVersion) return Ok{};
    SqlStatement tables(db, "SELECT count(*) FROM sqlite_master");
    if (!tables.ok() || tables.Step() != SqlStatement::kRow) return db.Fail("cannot read the schema");
    if (tables.Int(0) != 0) {
      return db.Plain("an SQLite database, but not an inferencex one (it has tables and no schema version); "
                      "pass another --db");
    }
    if (Status s = db.Exec(kSchemaV1, "cannot create the schema"); !s) return s;
    const std::string set = "PRAGMA user_version = " + std::to_string(kSweepStoreSchemaVersion);
    return db.Exec(set.c_str(), "cannot set the schema version");
  });
  if (!r) return r.error();
  return Ok{};
}

}  // namespace ix
