#include "submitter/collector/collector_store.h"

#include "submitter/sweep/sweep_schema.h"

namespace ix {
namespace {

// Outside the sweep's schema version: the collector's tables are made when
// missing by whichever process opens them first, and change nothing of the
// sweep's own tables.
constexpr const char* kTables = R"sql(
CREATE TABLE IF NOT EXISTS events(id TEXT PRIMARY KEY, sweep TEXT, entry INTEGER, step TEXT NOT NULL,
  event TEXT NOT NULL, node TEXT, time REAL NOT NULL, received REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_sweep ON events(sweep, time, id);
CREATE TABLE IF NOT EXISTS result_files(sweep TEXT NOT NULL, entry INTEGER NOT NULL, name TEXT NOT NULL,
  sha256 TEXT NOT NULL, size INTEGER NOT NULL, received REAL NOT NULL, content BLOB NOT NULL,
  PRIMARY KEY(sweep, entry, name));
)sql";

constexpr const char* kInsertEvent =
    "INSERT OR IGNORE INTO events(id, sweep, entry, step, event, node, time, received, body) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

constexpr const char* kEventColumns = "SELECT id, sweep, entry, step, event, node, time, received, body FROM events ";
constexpr const char* kResultColumns = "SELECT sweep, entry, name, sha256, size, received FROM result_files ";

std::optional<std::string> OptText(const SqlStatement& s, int c) {
  return s.IsNull(c) ? std::nullopt : std::optional<std::string>(s.Text(c));
}

Result<StoredEvent> ReadEvent(const SqlStatement& s) {
  return StoredEvent{s.Text(0), OptText(s, 1), s.OptInt(2), s.Text(3), s.Text(4),
                     OptText(s, 5), s.Real(6), s.Real(7), s.Text(8)};
}

Result<StoredResultInfo> ReadResultInfo(const SqlStatement& s) {
  return StoredResultInfo{s.Text(0), s.Int(1), s.Text(2), s.Text(3), s.Int(4), s.Real(5)};
}

// Column `column` of the result file `where`, or nullopt when there is no
// such file; `failure` says what could not be read.
Result<std::optional<std::string>> ResultColumn(const SqliteDb& db, const ResultTarget& where, const char* column,
                                                const std::string& failure) {
  SqlStatement s(db,
                 std::string("SELECT ") + column + " FROM result_files WHERE sweep = ?1 AND entry = ?2 AND name = ?3");
  if (!s.ok()) return db.Fail("cannot prepare to read a result file");
  s.BindAll(where.sweep, where.entry, where.name);
  switch (s.Step()) {
    case SqlStatement::kRow: return std::optional<std::string>(s.Text(0));
    case SqlStatement::kDone: return std::optional<std::string>();
    default: return db.Fail(failure);
  }
}

}  // namespace

Result<CollectorStore> CollectorStore::Open(const std::string& path) {
  Result<SqliteDb> db = OpenSweepDatabase(path);
  if (!db) return db.error();
  Result<Ok> made = db.value().Write<Ok>("create the collector's tables", [&]() -> Status {
    return db.value().Exec(kTables, "cannot create the collector's tables");
  });
  if (!made) return made.error();
  return CollectorStore(std::move(db).value());
}

Result<IngestCounts> CollectorStore::IngestEvents(const std::vector<ValidEvent>& events, double received) {
  if (events.empty()) return IngestCounts{};
  return db_.Write<IngestCounts>("store events", [&]() -> Result<IngestCounts> {
    SqlStatement s(db_, kInsertEvent);
    if (!s.ok()) return db_.Fail("cannot prepare to store events");
    IngestCounts c;
    for (size_t i = 0; i < events.size(); ++i) {
      const ValidEvent& e = events[i];
      s.Reset();
      s.BindAll(e.id, e.sweep, e.entry, e.step, e.event, e.node, e.time, received, e.body);
      if (s.Step() != SqlStatement::kDone) return db_.Fail("cannot store event " + e.id);
      if (db_.Changes() == 1) {
        ++c.stored;
        c.new_events.push_back(i);
      } else {
        ++c.duplicates;
      }
    }
    return c;
  });
}

Result<PutOutcome> CollectorStore::PutResult(const ResultTarget& where, const std::string& sha256,
                                             const std::string& content, double received) {
  return db_.Write<PutOutcome>("store a result file", [&]() -> Result<PutOutcome> {
    Result<std::optional<std::string>> old = ResultColumn(db_, where, "sha256", "cannot read a result file");
    if (!old) return old.error();
    if (old.value() == sha256) return PutOutcome::kUnchanged;
    // The content is bound as text (SqlStatement has no blob binding) and
    // cast: a CAST to BLOB keeps the bytes as they are, NULs included.
    Status put = RunSql(db_,
                        "INSERT OR REPLACE INTO result_files(sweep, entry, name, sha256, size, received, content) "
                        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, CAST(?7 AS BLOB))",
                        "store result file " + where.name, where.sweep, where.entry, where.name, sha256,
                        static_cast<int64_t>(content.size()), received, content);
    if (!put) return put.error();
    return old.value() ? PutOutcome::kReplaced : PutOutcome::kCreated;
  });
}

Result<std::vector<StoredEvent>> CollectorStore::ListEvents(const std::optional<std::string>& sweep) const {
  if (!sweep) {
    return SelectRows<StoredEvent>(db_, std::string(kEventColumns) + "ORDER BY time, id", "cannot list events",
                                   ReadEvent);
  }
  return SelectRows<StoredEvent>(db_, std::string(kEventColumns) + "WHERE sweep = ?1 ORDER BY time, id",
                                 "cannot list events", ReadEvent, *sweep);
}

Result<std::vector<StoredResultInfo>> CollectorStore::ListResults(const std::optional<std::string>& sweep) const {
  if (!sweep) {
    return SelectRows<StoredResultInfo>(db_, std::string(kResultColumns) + "ORDER BY sweep, entry, name",
                                        "cannot list result files", ReadResultInfo);
  }
  return SelectRows<StoredResultInfo>(db_, std::string(kResultColumns) + "WHERE sweep = ?1 ORDER BY entry, name",
                                      "cannot list result files", ReadResultInfo, *sweep);
}

Result<std::optional<std::string>> CollectorStore::ReadResult(const ResultTarget& where) const {
  return ResultColumn(db_, where, "content", "cannot read result file " + where.name);
}

}  // namespace ix
