#include "submitter/sweep/sqlite_db.h"

#include <sqlite3.h>

namespace ix {

// ---- SqlStatement ------------------------------------------------------------------

SqlStatement::SqlStatement(const SqliteDb& db, const char* sql) {
  ok_ = sqlite3_prepare_v2(db.db_, sql, -1, &s_, nullptr) == SQLITE_OK;
}

SqlStatement::~SqlStatement() { sqlite3_finalize(s_); }

void SqlStatement::Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
void SqlStatement::Bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
void SqlStatement::Bind(int i, const std::string& v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void SqlStatement::Bind(int i, const char* v) { sqlite3_bind_text(s_, i, v, -1, SQLITE_TRANSIENT); }
void SqlStatement::BindNull(int i) { sqlite3_bind_null(s_, i); }

SqlStatement::StepResult SqlStatement::Step() {
  switch (sqlite3_step(s_)) {
    case SQLITE_ROW: return kRow;
    case SQLITE_DONE: return kDone;
    default: return kError;
  }
}

void SqlStatement::Reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

bool SqlStatement::IsNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
int64_t SqlStatement::Int(int c) const { return sqlite3_column_int64(s_, c); }
double SqlStatement::Real(int c) const { return sqlite3_column_double(s_, c); }

std::string SqlStatement::Text(int c) const {
  const unsigned char* t = sqlite3_column_text(s_, c);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, c)))
           : std::string();
}

// ---- SqliteDb ------------------------------------------------------------------------

Result<SqliteDb> SqliteDb::Open(const std::string& path, const std::string& what, int busy_timeout_ms) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    Error e{path + ": cannot open " + what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))};
    sqlite3_close(db);
    return e;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return SqliteDb(path, db);
}

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    path_ = std::move(other.path_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

Error SqliteDb::Fail(const std::string& what) const { return Error{path_ + ": " + what + ": " + sqlite3_errmsg(db_)}; }

Status SqliteDb::Exec(const char* sql, const std::string& what) const {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return Fail(what);
  return Ok{};
}

int64_t SqliteDb::Changes() const { return sqlite3_changes(db_); }

bool SqliteDb::LastErrorIsDamage() const {
  const int err = sqlite3_errcode(db_) & 0xff;
  return err == SQLITE_NOTADB || err == SQLITE_CORRUPT;
}

bool SqliteDb::LastErrorIsDuplicateKey() const {
  return sqlite3_extended_errcode(db_) == SQLITE_CONSTRAINT_PRIMARYKEY;
}

std::string SqliteDb::LastErrorMessage() const { return sqlite3_errmsg(db_); }

Status SqliteDb::Begin(const char* sql, const std::string& what) const {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Fail("cannot start a transaction to " + what);
  }
  return Ok{};
}

Status SqliteDb::Commit(const std::string& what) const {
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK) return Ok{};
  Error e = Fail("cannot commit " + what);  // before ROLLBACK replaces the message
  Rollback();
  return e;
}

void SqliteDb::Rollback() const { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

void SqliteDb::EndRead() const { sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr); }

}  // namespace ix
