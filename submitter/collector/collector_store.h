// CollectorStore: the collector's tables in the sweep database (the same
// SQLite file as the sweep, opened as the sweep opens it: WAL, synchronous=
// FULL, a busy timeout, so both processes write it without "database is
// locked"):
//
//   events(id TEXT PRIMARY KEY, sweep TEXT, entry INTEGER, step TEXT NOT NULL,
//          event TEXT NOT NULL, node TEXT, time REAL NOT NULL,
//          received REAL NOT NULL, body TEXT NOT NULL)
//   result_files(sweep TEXT NOT NULL, entry INTEGER NOT NULL, name TEXT NOT NULL,
//          sha256 TEXT NOT NULL, size INTEGER NOT NULL, received REAL NOT NULL,
//          content BLOB NOT NULL, PRIMARY KEY(sweep, entry, name))
//
// plus an index of events by (sweep, time, id). Times are unix seconds.
// Ingest is idempotent by event id (INSERT OR IGNORE) and one transaction
// per call: all of a batch is stored, or none of it.
//
// One connection: use a CollectorStore from one thread at a time (the
// collector holds it under a mutex), and not across fork().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/collector/event_validation.h"
#include "submitter/sweep/sqlite_db.h"

namespace ix {

// One stored event, as the events table holds it.
struct StoredEvent {
  std::string id;
  std::optional<std::string> sweep;
  std::optional<int64_t> entry;
  std::string step;
  std::string event;
  std::optional<std::string> node;
  double time = 0;
  double received = 0;
  std::string body;  // the event as compact JSON
};

// A stored result file without its content.
struct StoredResultInfo {
  std::string sweep;
  int64_t entry = 0;
  std::string name;
  std::string sha256;
  int64_t size = 0;
  double received = 0;
};

// What one IngestEvents stored. Invariant: stored + duplicates is the
// number of events given; `new_events` lists the indexes (into the input)
// of the `stored` ones, in input order.
struct IngestCounts {
  int64_t stored = 0;
  int64_t duplicates = 0;
  std::vector<size_t> new_events;
};

// What PutResult did: a new file, new content for a name already there, or
// the same content again (nothing written).
enum class PutOutcome { kCreated, kReplaced, kUnchanged };

class CollectorStore {
 public:
  // Opens the sweep database at `path` (creating it, its parent 0700 and
  // the sweep's schema as `ixsubmit sweep` does) and adds the collector's
  // tables when missing. Errors name the path.
  static Result<CollectorStore> Open(const std::string& path);

  const std::string& path() const { return db_.path(); }

  // Stores the events not stored yet, in one transaction; `received` is
  // their arrival time. An SQLite error stores nothing.
  Result<IngestCounts> IngestEvents(const std::vector<ValidEvent>& events, double received);

  // Stores `content` as (sweep, entry, name) with its `sha256` (the caller
  // has checked it), replacing other content under that name.
  Result<PutOutcome> PutResult(const ResultTarget& where, const std::string& sha256, const std::string& content,
                               double received);

  // Events of one sweep (or all), ordered by (time, id).
  Result<std::vector<StoredEvent>> ListEvents(const std::optional<std::string>& sweep) const;
  // Result files of one sweep (or all), ordered by (sweep, entry, name).
  Result<std::vector<StoredResultInfo>> ListResults(const std::optional<std::string>& sweep) const;
  // The content of one result file; nullopt when there is none.
  Result<std::optional<std::string>> ReadResult(const ResultTarget& where) const;

  const SqliteDb& db() const { return db_; }

 private:
  explicit CollectorStore(SqliteDb db) : db_(std::move(db)) {}

  SqliteDb db_;
};

}  // namespace ix
