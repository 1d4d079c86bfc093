// SQLite, wrapped for the sweep store: one connection (SqliteDb) that names
// its file in every error, prepared statements (SqlStatement) that finalize
// themselves, and the two transaction shapes the store uses (Write: BEGIN
// IMMEDIATE, Read: one snapshot). sqlite_db.cc is the only file that
// includes sqlite3.h; everything above it speaks Result and std::string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace ix {

class SqliteDb;

// A prepared statement, finalized when it goes out of scope. Binding
// indexes are 1-based, column indexes 0-based, as in SQLite. Invariant:
// when ok() is false (the SQL did not compile) every other call is a
// harmless no-op on a null statement and Step() answers kError.
class SqlStatement {
 public:
  enum StepResult : uint8_t { kRow, kDone, kError };

  SqlStatement(const SqliteDb& db, const char* sql);
  SqlStatement(const SqliteDb& db, const std::string& sql) : SqlStatement(db, sql.c_str()) {}
  SqlStatement(const SqlStatement&) = delete;
  SqlStatement& operator=(const SqlStatement&) = delete;
  ~SqlStatement();
  bool ok() const { return ok_; }

  void Bind(int i, int64_t v);
  void Bind(int i, double v);
  void Bind(int i, const std::string& v);
  void Bind(int i, const char* v);
  void BindNull(int i);
  template <class T>
  void Bind(int i, const std::optional<T>& v) {
    if (v) {
      Bind(i, *v);
    } else {
      BindNull(i);
    }
  }
  // Binds `args` to ?1, ?2, ... in order (none: nothing; GCC 16 warns of
  // a counter set and never read in that instantiation).
  template <class... Args>
  void BindAll(const Args&... args) {
    if constexpr (sizeof...(Args) > 0) {
      int i = 0;
      (Bind(++i, args), ...);
    }
  }

  StepResult Step();
  // Ready to run again, with every binding cleared.
  void Reset();

  bool IsNull(int c) const;
  int64_t Int(int c) const;
  double Real(int c) const;
  std::string Text(int c) const;
  std::optional<int64_t> OptInt(int c) const { return IsNull(c) ? std::nullopt : std::optional<int64_t>(Int(c)); }
  std::optional<double> OptReal(int c) const { return IsNull(c) ? std::nullopt : std::optional<double>(Real(c)); }

 private:
  sqlite3_stmt* s_ = nullptr;
  bool ok_ = false;
};

// One open connection and the path that names it in every error. Use it
// from one thread, and open a new one in a forked child (a connection must
// not cross fork()). Invariant: handle is open until destruction or move.
class SqliteDb {
 public:
  // Opens (creating the file) the database at `path` with extended result
  // codes and a busy timeout. Error: "PATH: cannot open WHAT: why".
  static Result<SqliteDb> Open(const std::string& path, const std::string& what, int busy_timeout_ms);

  SqliteDb(SqliteDb&& other) noexcept : path_(std::move(other.path_)), db_(std::exchange(other.db_, nullptr)) {}
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb();

  const std::string& path() const { return path_; }

  // "PATH: WHAT: SQLite's message for the last error".
  Error Fail(const std::string& what) const;
  // "PATH: WHAT".
  Error Plain(const std::string& what) const { return Error{path_ + ": " + what}; }
  // Runs `sql` (any number of statements, no rows wanted).
  Status Exec(const char* sql, const std::string& what) const;
  // The rows the last INSERT, UPDATE or DELETE changed.
  int64_t Changes() const;
  // The last error said the file is not a database, or a damaged one.
  bool LastErrorIsDamage() const;
  // The last error was a duplicate primary key.
  bool LastErrorIsDuplicateKey() const;
  std::string LastErrorMessage() const;

  // Runs `fn` in BEGIN IMMEDIATE ... COMMIT: the write lock is taken (waiting
  // up to the busy timeout) before anything is read, so a concurrent writer
  // can never make this transaction's read-then-write fail with
  // SQLITE_BUSY. Any error rolls everything back.
  template <class T, class Fn>
  Result<T> Write(const std::string& what, Fn&& fn) const {
    if (Status begun = Begin("BEGIN IMMEDIATE", what); !begun) return begun.error();
    Result<T> r = fn();
    if (!r.ok()) {
      Rollback();
      return r;
    }
    if (Status committed = Commit(what); !committed) return committed.error();
    return r;
  }

  // A read transaction, so several SELECTs see one snapshot.
  template <class T, class Fn>
  Result<T> Read(const std::string& what, Fn&& fn) const {
    if (Status begun = Begin("BEGIN", what); !begun) return begun.error();
    Result<T> r = fn();
    EndRead();
    return r;
  }

 private:
  friend class SqlStatement;
  SqliteDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status Begin(const char* sql, const std::string& what) const;
  // COMMIT; on failure the error, after a ROLLBACK.
  Status Commit(const std::string& what) const;
  void Rollback() const;
  void EndRead() const;

  std::string path_;
  sqlite3* db_ = nullptr;
};

// Prepares `sql`, binds `args` to ?1, ?2, ... and steps it to its end,
// reading each row with `read` (a Result<T> from the statement). Errors,
// the row reader's aside: "PATH: WHAT: SQLite's message".
template <class T, class Read, class... Args>
Result<std::vector<T>> SelectRows(const SqliteDb& db, const std::string& sql, const std::string& what, Read&& read,
                                  const Args&... args) {
  SqlStatement s(db, sql);
  if (!s.ok()) return db.Fail(what);
  s.BindAll(args...);
  std::vector<T> out;
  SqlStatement::StepResult rc;
  while ((rc = s.Step()) == SqlStatement::kRow) {
    Result<T> row = read(s);
    if (!row) return row.error();
    out.push_back(std::move(row).value());
  }
  if (rc != SqlStatement::kDone) return db.Fail(what);
  return out;
}

// Prepares `sql`, binds `args` and runs it once; for a statement without
// rows. Errors: "PATH: cannot prepare to WHAT: ..." and "PATH: cannot
// WHAT: ...". Changes() then says how many rows it changed.
template <class... Args>
Status RunSql(const SqliteDb& db, const char* sql, const std::string& what, const Args&... args) {
  SqlStatement s(db, sql);
  if (!s.ok()) return db.Fail("cannot prepare to " + what);
  s.BindAll(args...);
  if (s.Step() != SqlStatement::kDone) return db.Fail("cannot " + what);
  return Ok{};
}

// Prepares `sql` once and runs it for each of `items`, bound by
// `bind(statement, item)`. Errors: "PATH: cannot prepare to WHAT: ..." and
// "PATH: cannot NAME(item): ...", at the first item that fails.
template <class T, class Bind, class Name>
Status RunForEach(const SqliteDb& db, const char* sql, const std::string& what, const std::vector<T>& items,
                  Bind&& bind, Name&& name) {
  SqlStatement s(db, sql);
  if (!s.ok()) return db.Fail("cannot prepare to " + what);
  for (const T& item : items) {
    s.Reset();
    bind(s, item);
    if (s.Step() != SqlStatement::kDone) return db.Fail("cannot " + name(item));
  }
  return Ok{};
}

}  // namespace ix
